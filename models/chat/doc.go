// Package chat renders a model's own Jinja chat template (the chat_template
// of tokenizer_config.json, chat_template.json or chat_template.jinja) into
// the prompt text the model was trained on, and derives the tokens that end
// a model turn.
//
// Rendering uses github.com/ardanlabs/jinja with the environment Hugging
// Face transformers' apply_chat_template sets up: trim_blocks and
// lstrip_blocks, raise_exception, tojson, strftime_now, the tokenizer's
// special-token strings (bos_token, eos_token, ...), tools and documents
// set to None. Goldens in testdata/ were rendered by Python jinja2 in that
// environment (testdata/make_golden.py).
//
// Templates come with downloaded models and are untrusted: they are
// compiled and rendered in a child process (this executable re-run with
// MLXCHAT_CHAT_TEMPLATE_SANDBOX=1, see sandbox.go) with a 16 MiB stack,
// range() lists of at most 10^6 items, and memory, output and time caps of
// 512 MiB, 64 MiB and 5 s, raised for a long conversation (32 and 4 bytes
// per byte of it, and 1 s per 2 MiB), so endless macro recursion, huge
// loops or string doubling end within seconds in a one-line error naming
// the template file and the limit hit, instead of killing or hanging the
// chat. A rendering costs a few milliseconds.
//
// Load also refuses a template that cannot serve: an empty one (naming the
// file, and the "chat_template" key of a JSON file), and one that fails on
// a short test conversation (user, assistant, user), renders it as an
// empty prompt or leaves its messages out; so a broken template (unknown
// filter, raise_exception, hostile loop) fails the model's load, not the
// first message.
//
// The rendered prompt already holds the BOS token when the template writes
// it (Gemma, Llama 3), so it must be encoded without adding special tokens
// again (tokenizer.Encode(prompt, false)).
//
// This package imports the standard library and github.com/ardanlabs/jinja;
// its init function turns the process into the renderer child only when the
// sandbox variable is set;
// it does not import models/tokenizer (StopTokens takes any TokenIDer).
package chat
