// Package ui is the bubbletea terminal chat: conversation view, input editor,
// status line with the live-window meter, slash commands and paste handling.
// It talks to the engine only through engine's request and event types and
// never touches tensors.
//
// It may import engine, themes, bytesize (sizes, formatted as the command
// line formats them), textinput (the text check of /read, which `mlxchat
// run` makes too), safefile (config, history and conversation files, and
// /read, read without trusting what the path is), the charm libraries (with their termenv,
// go-runewidth and cancelreader) and github.com/adrg/xdg for its file
// locations; not models,
// kvcache, tensor or metal. Only its tests import more: engine/enginetest
// and tensor/cpu (see Tests).
//
// # Structure
//
// The bubbletea model (model.go) holds one phase (loading, idle, prefill,
// decode, summarize, stopping, quit), which decides what keys do and what
// the status line shows, and four components, each in its own file with
// its own tests: the transcript (transcript.go: the turns, their cached
// rendering, the viewport; every answer is rendered through
// answerSegments and renderAnswer, where a foldable part of an answer is
// one more segment), the editor (editor.go: the text area, the collapsed
// pastes behind its labels, the input history), the status (status.go:
// the notice line, the meter with its trim flash, progress and speed) and
// the command palette (palette.go: the help of the command being typed,
// Tab completion). send.go sends messages and follows the request in
// flight, exec.go runs slash commands, save.go snapshots the conversation
// for the autosave, view.go lays the screen out.
//
// # Tests
//
// Each component has its tests (transcript_test, editor_test,
// status_test, palette_test); the others drive the model with messages
// and a fake engine (model_test, input_test, commands_test, pin_test, store_test,
// load_test, statedir_test, termwidth_test); the end-to-end tests (e2e_test, exit_test, run_test)
// run the real engine on engine/enginetest's tiny model with tensor/cpu.
// Two tests run the real program: they build the main package and
// models/cmd/mkmodel (a build failure fails them) and drive the binary in
// a tmux terminal. TestTmux types, pastes, changes /kv, pins a message,
// switches to 8-bit KV, stops a prefill
// with Esc and quits; its screen after the paste's answer is a golden,
// testdata/screen.txt, which is also the README's capture (speeds and
// memory aside; go test ./ui -run TestTmux -update-screen rewrites both). TestHostile sends SIGHUP, SIGTERM, SIGINT and
// SIGQUIT while an answer streams (SIGHUP and SIGTERM also during a
// /summarize), gives it a state dir that is a file,
// read-only or full (tmpfs mounts through unshare -rm, since root ignores
// permission bits), kills it with -9 during saves, starts two chats in the
// same second, and pastes 10 MiB, invalid UTF-8, resizes to 1x1, spams /kv
// during decode and /loads a device and a FIFO; every case wants no hang,
// no panic, and nothing typed or streamed lost. Without tmux (or user
// namespaces, for the mounts) these skip, except under CI=true, where they
// fail; scripts/test.sh installs tmux. -short skips them. Fuzz targets,
// one for each parser of input from outside, seeds in testdata/fuzz:
// FuzzParseConversation (conversation files), FuzzParseCommand (slash
// commands), FuzzPasteFilter (terminal input: bracketed pastes cut out
// whole whatever the reads) and FuzzParseConfig (the config file).
//
// # Contract with main
//
// main builds and starts the engine, then calls Run and closes the engine
// after Run returns:
//
//	eng := engine.NewLoading(loader, engine.Options{Settings: st, ...})
//	eng.Start(ctx)
//	defer eng.Close()
//	err := ui.Run(ctx, ui.Options{
//		Engine:      eng,           // required; anything with Submit and Events
//		ModelName:   arg,           // what the user typed (name or directory)
//		ModelDir:    dir,           // resolved directory, for /model ("" if unknown yet)
//		Settings:    st,            // the settings the engine started with
//		CountTokens: count,         // optional: tokenizer count for paste labels
//		Theme:       *themeFlag,    // --theme ("" = config file, then "dark")
//		ConfigPath:  *configFlag,   // --config ("" = $XDG_CONFIG_HOME/mlxchat/config.json)
//		StateDir:    "",            // "" = $XDG_STATE_HOME/mlxchat
//		Report:      os.Stderr,     // after exit: where the conversation was saved
//	})
//
// While a NewLoading engine loads, Run shows a progress view fed by
// ModelLoading events above the editor, which already takes input (a
// message waits there until Ready). A load Error (request id 0
// before Ready) ends Run with that error; so does the event channel closing.
// A quit by the user (Ctrl+C twice, /quit) returns nil; ctx ending returns
// ctx.Err(). NO_COLOR (or Options.NoColor) drops all colours.
//
// # Screen
//
// From the top: the conversation (user turns, model answers rendered as
// markdown with glamour, command output, and once the model has loaded its
// load-time notes, engine.ModelInfo.Notes, one dimmed "note:" line each),
// a rule, the input editor, a notice line (errors, confirmations,
// completions or key hints) and the status line:
//
//	kv ▕██████████▏ 1024/1024 live · 2631 seen · 1607 trimmed · swa 512 │ decode 23.4 tok/s │ mem 1.5 GiB
//
// The bar is live/max KV keys in eighths of a cell; with /kv off the max
// is the model's context length (the engine trims there too), "∞" only
// when the model gives none.
// Pinned tokens ("· 120 pinned") and the cache's memory ("· KV 1.2 MiB",
// "(16-bit)" or "(8-bit)" under /kv bits 16 or 8) follow when there are any. A Trim
// event flashes the bar and shows "✂ N" for a moment: N is how much the
// meter's trimmed count grew since the flash began, so the two agree. During prefill the
// second segment is "prefill 3/6 chunks · 412 tok/s" (from "prefill 0/6
// chunks" as soon as the engine has tokenized the prompt; before that, for
// a text of 256 KiB or more, "prefill · tokenizing 10.0 MiB…" from the
// moment it is sent, and "summarize · tokenizing …" for a /summarize).
// "decode 23.4 tok/s" is the running request's speed once it streams
// tokens (a /summarize's pieces stream none, so none shows beside
// "summarize 3/12") and, once idle, the last request's.
// Sizes are in binary units everywhere (B, KiB, MiB, GiB).
//
// Streaming: engine events are read in batches; tokens only append to the
// answer, and a 30 fps tick re-renders the answer, reusing the rendering of
// finished markdown blocks (up to the last blank line outside a code fence)
// and rendering only the unfinished tail.
//
// # Keys
//
// Enter sends; Alt+Enter or Ctrl+J insert a newline; Up/Down on the first
// or last line walk the input history; Tab completes /commands (and theme
// names, "off" for /kv, /max, /topp, /topk, /minp, "bits 32|16|8" for /kv); Esc stops the answer (the partial answer is kept,
// and so is the reasoning of a model stopped while thinking; if nothing
// was generated yet the message goes back into the editor, above anything
// typed meanwhile);
// PgUp/PgDn and the mouse wheel scroll; Ctrl+O shows or hides the folded
// parts of every answer (a reasoning model's thinking, think.go: streamed
// and kept apart from the answer, dimmed, folded to one line; the piece
// summaries of /summarize); Ctrl+C twice within 2 s quits
// (the first one also stops a running answer).
//
// Enter on a message while an answer runs (or the model loads) queues it
// (queue.go), as a terminal does for ollama or mlx_lm.chat: it leaves the
// editor, so that a command typed next runs as typed instead of being
// glued onto it, the notice says "queued: your message is sent when the
// answer ends", the status line "1 msg queued", and it is sent when
// the answer ends by itself (or the model is ready); a second message
// joins it. A "/summarize ..." line holding pastes is queued the same way
// ("/summarize queued"), as an entry of its own that nothing joins: the
// entries go in the order sent, each when the answer before it ends by
// itself ("2 queued"). Esc stops the answer and puts everything queued
// back into the editor, in order, not sent (what is sent after the Esc
// goes once the answer has stopped); a failed answer puts it back too.
// When the answer ends while the editor holds text, the queue waits:
// Enter sends its first entry (a message typed joins the queue first, so
// it goes with a queued message; a command runs first) and Esc puts it
// back. It is saved with the draft.
//
// A bracketed paste of >= 1000 characters or >= 8 lines (configurable) is
// shown in the editor as one block "[pasted: 2,631 tokens, 11 KiB]" (the count
// is "~bytes/4" when no token counter is given; it leaves out the white
// space around the paste, as the chat template and the fit check do, so a
// message that is the paste gets the same count from both) and sent intact; Ctrl+E
// expands the blocks into editable text. A paste the editor cannot hold
// exactly (tabs, control characters) is collapsed however short. From 256 KiB on the tokens are
// counted off the UI goroutine: the block reads "[pasted: 10.0 MiB,
// counting tokens…]" and the notice line shows the progress until the
// count replaces it (Enter sends meanwhile).
//
// # Fit check
//
// A message whose bytes could exceed the live window (the cap, or with
// /kv off the model's context length, which the engine trims to as well;
// less the sink and the pins; a token covers at least one byte) is first
// checked by the engine (FitCheck), which renders and tokenizes it off the
// engine's request queue. A message that fits is sent at once. One that
// would push part of itself out of the window is held: the editor empties
// and the notice gives the numbers, e.g. "paste 35,120 tokens > live
// window 4,096: the model would see only the last 3,900. Enter sends
// anyway · /summarize summarizes it in pieces · /kv 40000 raises the cap
// (≈ 1.2 GiB of KV)" (the KV memory of the suggested cap from the model's
// real cache layout; no /kv when the window is already the model's
// context: "live window 2,048 (the model's context)"). The editor's hint
// offers the same choices, the /kv only when the engine suggests one.
// /kv N above the model's context length (max_position_embeddings) is
// refused with one line naming it: a window wider than the positions the
// model was trained on cannot help. One typed while the model loads, when
// its context length is not known yet, is taken, and taken off again with
// one error line when the loaded model's context is below it. Enter on the
// empty editor sends it anyway; Esc puts it back into the editor; a
// command runs with it held (a settings change checks it again and says
// when it fits); a new message joins it and both are checked again. The
// held message is saved as the draft.
//
// # Trim boundary
//
// After the prefill and after the answer the engine sends a Layout: where
// each message of the request lies in the cache. A message wholly outside
// the live window is dimmed and labelled "trimmed" (the model no longer
// attends it); the message the window cuts is labelled "cut" and shows a
// marker line where the model's view begins ("✂ above: 2,941 of its 3,005
// tokens are outside the live window; the model sees from here"), or, when
// the cut falls inside a collapsed paste, after the paste's label ("✂ the
// model sees only the last 64 of this message's 3,005 tokens"). Each
// message's label shows its number at the right edge (for /pin N). /stats
// lists the trimmed and cut messages. The marks are dropped when the cache
// is emptied (/clear, an error that reset it, a /summarize).
//
// # Pins and KV storage
//
// /pin [N] sets engine.Message.Pinned on message N (the #N of its label;
// by default the last message): the engine keeps its tokens in the
// never-trimmed prefix of the cache, beside the attention sink. Its label
// says "pinned", the meter counts the pinned tokens ("· 120 pinned"),
// /stats lists the pinned messages. The pinned tokens are, everywhere,
// those a pin keeps beside the sink (engine.CacheState.Pinned, what the
// engine's half-the-cap budget counts): a first message that reaches into
// the sink is "message #1 pinned (7 tokens beside the sink, 1 more in
// it)" on the notice line, "7 pinned" on the meter and "pinned #1 you (7
// tokens beside the sink, 1 more in it; never trimmed)" in /stats. The
// flag is saved with the
// conversation and restored by /load. /unpin [N] releases message N (by
// default the last pinned one). A bad N, nothing to pin, or a pin that
// would take the sink and the pins past half the cap (the engine's limit)
// is one error line and changes nothing; a /kv below what the pins need is
// refused the same way. Where the UI cannot know a message's tokens (not
// sent since a /load), the engine refuses the next answer with the same
// reason, which is shown as one line with the message back in the editor.
// A message pinned after part of it was trimmed makes the next answer
// prefill the conversation again (/stats says why).
//
// /kv bits 32, 16 and 8 set engine.Settings.KVBits: 32 (the default)
// stores the cache as float32, 16 as float16 (half the memory), 8 as int8
// with a scale per token and head (a little over a quarter); 16 and 8
// decode into a float32 copy of one layer's view. The change empties the
// cache, so the next answer prefills the conversation again. The meter
// shows the bytes the cache holds, "KV 60.0 MiB", with "(16-bit)" or
// "(8-bit)" when it stores those.
//
// # Summarize
//
// /summarize [INSTRUCTION] sends an engine.Summarize of the held message
// (the pastes in it are the document, the text typed around them the
// instruction), else of the last paste or /read file of the conversation;
// a line "/summarize ... [pasted: ...]" in the editor does the same with
// its pastes. With none of these, a bare /summarize waits for its
// document: the notice line and the editor's placeholder say so, the next
// paste (however short) or /read file is summarized at once with the
// instruction given, and Esc (or a message sent instead) drops the wait. The document is answered in pieces within the cap: the
// status line shows "summarize 3/9", then "summarize · combining 1/2"; Esc
// stops and keeps what is done (the finished piece summaries become the
// answer, "stopped after 3 of 9 pieces"). The transcript shows a user turn
// "/summarize" with the document's label and the final answer with the
// piece summaries folded under it; Ctrl+O unfolds (and folds) them. The
// conversation file keeps the instruction and the pieces, and later turns
// send the instruction and the piece summaries in place of the document,
// which did not fit.
//
// # Files in messages
//
// /read PATH attaches a text file to the message being written: it is
// read off the UI goroutine and appears in the editor as one collapsed
// block, "[file notes.md: 2,631 tokens, 11 KiB]", sent and saved like a
// paste. A word "@PATH" in a message does the same when the message is
// sent: each @word naming a file is read (off the UI goroutine) and
// replaced by its block, then the message goes on (through the fit
// check); an @word that is no file stays text ("@alice"), unless it looks
// like a path (a "/", or a leading "~" or "."), which must exist; "@@"
// writes a literal "@". Only a regular file of at most 32 MiB that is UTF-8
// text without NUL bytes is attached (a BOM is dropped, CRLF made LF); a
// binary, invalid, empty, huge, missing or unreadable file, a directory or
// a FIFO gets one error line naming it, and nothing is sent.
//
// Run reads the terminal itself (raw mode, restored on exit) and passes
// bubbletea the input through pasteInput, which cuts each bracketed paste
// out whole in linear time (bubbletea's own reader is quadratic in the
// paste: 10 MiB took ~80 s) and writes each byte that is not UTF-8 as the
// text "\xNN" instead of dropping it.
//
// # Commands
//
// /kv N|off|bits 32|16|8 (/kv 0 is /kv off, as --max-kv-size 0 is), /chunk N, /temp X, /topp X|off, /topk N|off, /minp X|off (0 is off for each, and /topp 1, as for their flags),
// /seed N, /max N|off (/max 0 is off, as --max-tokens 0 is), /think on|off (refused when the model's template
// has no enable_thinking switch),
// /system TEXT, /summarize [INSTRUCTION], /read PATH, /pin [N], /unpin [N],
// /clear, /stats,
// /theme NAME, /save [FILE], /load FILE,
// /model, /help, /quit. ParseCommand is the pure parser; a bad argument gives
// one error line naming the command and what was expected, and nothing
// else changes. A command leaves the editor whether it works or not, so
// that what is typed next is not glued onto it; a failed one (/load and
// /read when their read fails, too) is the last history entry, and its
// error ends with "(↑ brings the command back)". A "/summarize ..." line
// holding pastes, sent while an answer runs, is queued like a message.
// "/system" followed by a paste takes the pasted text as the system
// prompt; any other command line holding a paste is refused with one line
// and stays in the editor, paste and all (it is never sent as a message;
// "//" at the start sends a line that starts with "/"). Settings commands are checked with
// engine.Settings.Validate and sent as UpdateSettings; if the engine refuses
// one, the previous value comes back. A change made while an answer runs
// takes effect from the next one, and its notice says so once.
//
// # Files
//
// Config (see Config): JSON at $XDG_CONFIG_HOME/mlxchat/config.json or
// --config: the theme, autosave and paste settings, and generation defaults
// (max_kv_size, temp, ...) that cli applies to the chat, run and bench
// before the flags, which override them. /theme NAME writes the theme back
// into that file (other keys kept, atomic rename). Conversations are autosaved (atomically: temp file + rename) to
// $XDG_STATE_HOME/mlxchat/conversations/<start time>.json after every user
// message, every answer, every paste into the editor, every few seconds
// while the draft or a streaming answer grows, and on every exit path (quit,
// SIGHUP, SIGINT, SIGTERM, SIGQUIT, ctx end, a recovered panic), draft and
// collapsed pastes included. An answer still streaming is saved with
// "partial": true and "note": "interrupted", and shows as
// "partial · interrupted" when loaded; a /summarize still in its pieces
// is saved as Esc would keep it, the pieces done as a partial answer,
// "interrupted after 3 of 9 pieces". Every quit and signal path words it
// so, also when the engine's answer to the stop reaches the chat before
// it ends; only Esc says "stopped". Any other answer that ended early
// shows the label it had live once loaded ("max tokens", with the /max it
// was cut at, "stopped", "repeating", "failed"): a token-limit cut is no
// interruption. The periodic save also writes the
// reasoning and each finished piece as they come. /save FILE and
// /load FILE use that folder for bare names (".json" added when there is
// no extension). /save of a path with a folder needs that folder to exist
// (it is not created) and writes over an existing file only when it is a
// regular file, as named; a missing folder, a directory, a device or a FIFO
// is one error line naming the path. /load of a directory says so. The
// exit line "conversation saved to PATH (reopen it with /load NAME)" gives
// the bare name only for a file in the conversations folder, else the
// whole path (a temporary folder the chat fell back to, a file /load
// opened elsewhere), so that /load in a new session finds it. The input
// history is $XDG_STATE_HOME/mlxchat/history.json.
//
// /load reads its file off the UI goroutine and takes only a regular file
// of at most 256 MiB (a FIFO, /dev/zero or a directory gets a one-line
// error at once); the config file (at most 1 MiB) and the input history
// are read the same way. A loaded conversation is repaired so that the chat can go
// on, and the notice says how: consecutive messages of one role are merged,
// an answer with no question before it is shown but not sent, and an
// unanswered last message goes back into the editor.
//
// A conversation's file is named from its start time when it is first
// written and created exclusively then (a hard link of the written temp
// file, which never replaces a file; "-2", "-3"... when taken), so chats
// started in the same second never share one, and a kill never leaves an
// empty or partial file. A state dir that
// cannot be used (a regular file, read-only, full) is reported once on the
// notice line and replaced by a folder under the system's temporary
// directory (or memory only, if that fails too); a save that fails later
// moves the conversation there once, saying where. At start, temporary
// files that a killed session left in the state dir (".NAME.tmp-PID-N"
// whose process is gone, or older than an hour) are removed. An error
// notice wraps to up to three lines; a longer one shows its cause first
// ("no space left on device — autosave: ...").
package ui
