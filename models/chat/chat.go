package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"
)

// Message is one turn of a conversation.
type Message struct {
	Role    string // "system", "user", "assistant" (or "tool")
	Content string
	// Reasoning, when not empty, is passed as the message's
	// reasoning_content (an assistant turn's thinking, which templates
	// such as Qwen 3's show or drop by position).
	Reasoning string
}

// Options configure a Template.
type Options struct {
	// SpecialTokens are passed to the template as variables, as
	// transformers passes the tokenizer's special tokens: typically
	// "bos_token" and "eos_token" (also "pad_token", "unk_token").
	SpecialTokens map[string]string
	// Now is the clock strftime_now reads; nil means time.Now.
	Now func() time.Time
	// Name names the template in errors, typically the file it came from;
	// empty means "chat template".
	Name string
}

// Template is a compiled chat template. It is safe for concurrent use.
// Templates are untrusted input: they are compiled and rendered in a
// sandboxed child process under limits on memory, stack depth (macro
// recursion), output size and time (see sandbox.go).
type Template struct {
	source    string
	name      string
	special   map[string]string
	now       func() time.Time
	endOfTurn string
	limits    renderLimits
}

// New compiles a chat template source.
func New(source string, opts Options) (*Template, error) {
	name := opts.Name
	if name == "" {
		name = "chat template"
	}
	if _, err := runSandboxed(&renderRequest{Limits: defaultLimits.forInput(len(source)), Source: source, CompileOnly: true}); err != nil {
		return nil, fmt.Errorf("compiling %s: %w", name, err)
	}
	t := &Template{source: source, name: name, special: map[string]string{}, now: opts.Now, endOfTurn: detectEndOfTurn(source), limits: defaultLimits}
	for k, v := range opts.SpecialTokens {
		t.special[k] = v
	}
	if t.now == nil {
		t.now = time.Now
	}
	return t, nil
}

// Load reads the chat template of a model directory, in the order
// transformers uses: chat_template.jinja, then chat_template.json, then the
// "chat_template" of tokenizer_config.json (a string, or a list of named
// templates of which "default" is used). The special-token strings come
// from tokenizer_config.json when it exists.
func Load(dir string) (*Template, error) {
	cfgPath := filepath.Join(dir, "tokenizer_config.json")
	cfg, err := os.ReadFile(cfgPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("loading chat template: %w", err)
	}
	var special map[string]string
	if cfg != nil {
		if special, err = specialTokens(cfg); err != nil {
			return nil, fmt.Errorf("loading chat template from %s: %w", cfgPath, err)
		}
	}
	source, from, err := findTemplate(dir, cfg)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(source) == "" {
		what := "the file is empty"
		if filepath.Ext(from) == ".json" {
			what = `"chat_template" is empty`
		}
		return nil, fmt.Errorf("%s: %s: the model has no chat template to build prompts with", from, what)
	}
	t, err := New(source, Options{SpecialTokens: special, Name: from})
	if err != nil {
		return nil, err
	}
	if err := t.check(); err != nil {
		return nil, err
	}
	return t, nil
}

// probe is the conversation Load renders once, so that a template that
// cannot render (an unknown filter or test, a syntax error the compiler
// let through, a hostile loop) fails the load, not the first message.
var probe = []Message{
	{Role: "user", Content: "Hello."},
	{Role: "assistant", Content: "Hello! How can I help?"},
	{Role: "user", Content: "Say hi."},
}

// check renders probe and wants a prompt that holds its last message.
func (t *Template) check() error {
	out, err := t.render(probe, true, nil)
	switch {
	case err != nil:
		return fmt.Errorf("%s: the chat template fails on a short test conversation (user, assistant, user): %w", t.name, err)
	case strings.TrimSpace(out) == "":
		return fmt.Errorf("%s: the chat template renders a short test conversation as an empty prompt", t.name)
	case !strings.Contains(out, probe[len(probe)-1].Content):
		return fmt.Errorf("%s: the chat template leaves the messages out of the prompt (a short test conversation rendered as %.80q)", t.name, out)
	}
	return nil
}

// findTemplate returns the template source and the file it came from.
func findTemplate(dir string, cfg []byte) (source, from string, err error) {
	p := filepath.Join(dir, "chat_template.jinja")
	if data, err := os.ReadFile(p); err == nil {
		return string(data), p, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", "", fmt.Errorf("loading chat template: %w", err)
	}
	p = filepath.Join(dir, "chat_template.json")
	if data, err := os.ReadFile(p); err == nil {
		var doc struct {
			ChatTemplate json.RawMessage `json:"chat_template"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			return "", "", fmt.Errorf("loading chat template from %s: %w", p, err)
		}
		s, err := templateField(doc.ChatTemplate)
		if err != nil {
			return "", "", fmt.Errorf("loading chat template from %s: %w", p, err)
		}
		return s, p, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", "", fmt.Errorf("loading chat template: %w", err)
	}
	p = filepath.Join(dir, "tokenizer_config.json")
	if cfg == nil {
		return "", "", fmt.Errorf("no chat template in %s: expected chat_template.jinja, chat_template.json or tokenizer_config.json", dir)
	}
	var doc struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
	}
	if err := json.Unmarshal(cfg, &doc); err != nil {
		return "", "", fmt.Errorf("loading chat template from %s: %w", p, err)
	}
	if len(doc.ChatTemplate) == 0 || string(doc.ChatTemplate) == "null" {
		return "", "", fmt.Errorf("no chat template in %s: tokenizer_config.json has no \"chat_template\" and there is no chat_template.jinja", dir)
	}
	s, err := templateField(doc.ChatTemplate)
	if err != nil {
		return "", "", fmt.Errorf("loading chat template from %s: %w", p, err)
	}
	return s, p, nil
}

// templateField reads a chat_template value: a string, or a list of
// {"name", "template"} objects from which "default" is taken.
func templateField(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var named []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(raw, &named); err != nil {
		return "", fmt.Errorf("\"chat_template\": expected a string or a list of {name, template}: %w", err)
	}
	var names []string
	for _, n := range named {
		if n.Name == "default" {
			return n.Template, nil
		}
		names = append(names, n.Name)
	}
	return "", fmt.Errorf("\"chat_template\": no template named \"default\" among %q", names)
}

// specialTokens reads the special-token strings of tokenizer_config.json
// (plain strings or AddedToken objects with "content").
func specialTokens(cfg []byte) (map[string]string, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(cfg, &doc); err != nil {
		return nil, fmt.Errorf("parsing tokenizer_config.json: %w", err)
	}
	out := map[string]string{}
	for _, key := range []string{"bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token"} {
		raw, ok := doc[key]
		if !ok || string(raw) == "null" {
			continue
		}
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			out[key] = s
			continue
		}
		var obj struct {
			Content *string `json:"content"`
		}
		if err := json.Unmarshal(raw, &obj); err != nil || obj.Content == nil {
			return nil, fmt.Errorf("%s: expected a string or an object with \"content\", got %.60s", key, raw)
		}
		out[key] = *obj.Content
	}
	return out, nil
}

// Render renders the conversation; with addGenerationPrompt the prompt ends
// with the header that opens the model's reply.
func (t *Template) Render(messages []Message, addGenerationPrompt bool) (string, error) {
	return t.RenderWith(messages, addGenerationPrompt, nil)
}

// RenderWith is Render with extra template variables, such as
// enable_thinking for Qwen 3 or date_string for Llama 3.x. Values may be
// nil, bool, int, int64, float64, string, []any or map[string]any.
func (t *Template) RenderWith(messages []Message, addGenerationPrompt bool, extra map[string]any) (string, error) {
	out, err := t.render(messages, addGenerationPrompt, extra)
	if err != nil {
		return "", fmt.Errorf("%s: %w", t.name, err)
	}
	return out, nil
}

// render is RenderWith without the template's name on errors.
func (t *Template) render(messages []Message, addGenerationPrompt bool, extra map[string]any) (string, error) {
	now := t.now()
	zone, offset := now.Zone()
	n := 0
	for _, m := range messages {
		n += len(m.Role) + len(m.Content) + len(m.Reasoning)
	}
	req := &renderRequest{Source: t.source, Messages: messages, AddGenerationPrompt: addGenerationPrompt,
		Special: t.special, NowUnixNano: now.UnixNano(), NowZone: zone, NowOffset: offset, Extra: map[string]wireValue{}}
	for k, v := range extra {
		w, err := toWire(v)
		if err != nil {
			return "", fmt.Errorf("variable %q: %w", k, err)
		}
		req.Extra[k] = w
		n += w.size()
	}
	req.Limits = t.limits.forInput(n)
	return runSandboxed(req)
}

// renderValues renders a compiled template in transformers'
// apply_chat_template environment; it runs in the sandbox child.
func renderValues(tmpl *jinja.Template, messages []Message, addGenerationPrompt bool, special map[string]string, now func() time.Time, extra map[string]any, rng jinja.Value) (string, error) {
	msgs := make([]jinja.Value, len(messages))
	for i, m := range messages {
		d := jinja.NewDict()
		d.AsDict().Set("role", jinja.NewString(m.Role))
		d.AsDict().Set("content", jinja.NewString(m.Content))
		if m.Reasoning != "" {
			d.AsDict().Set("reasoning_content", jinja.NewString(m.Reasoning))
		}
		msgs[i] = d
	}
	strftimeNow := func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 || !args[0].IsString() {
			return jinja.Undefined(), errors.New("strftime_now: expected one format string")
		}
		return jinja.NewString(strftime(args[0].AsString(), now())), nil
	}
	data := map[string]jinja.Value{
		"messages":              jinja.NewList(msgs),
		"add_generation_prompt": jinja.NewBool(addGenerationPrompt),
		"tools":                 jinja.None(),
		"documents":             jinja.None(),
		"strftime_now":          jinja.NewCallable("strftime_now", strftimeNow),
		"range":                 rng,
	}
	for k, v := range special {
		data[k] = jinja.NewString(v)
	}
	for k, v := range extra {
		data[k] = jinja.FromGoValue(v)
	}
	return tmpl.RenderValues(data)
}

// Reads reports whether the template mentions the variable name (such as
// enable_thinking), that is whether passing it to RenderWith can change
// the output.
func (t *Template) Reads(name string) bool { return strings.Contains(t.source, name) }

// Source returns the template text.
func (t *Template) Source() string { return t.source }

// EndOfTurn returns the token string that closes a turn in this template
// ("<end_of_turn>" for Gemma, "<|eot_id|>" for Llama 3, "<|im_end|>" for
// Qwen and other ChatML templates), or "" if none is recognised.
func (t *Template) EndOfTurn() string { return t.endOfTurn }

// endOfTurnMarkers are known end-of-turn tokens, most specific first.
var endOfTurnMarkers = []string{
	"<end_of_turn>", "<|eot_id|>", "<|im_end|>", "<|END_OF_TURN_TOKEN|>", "<|end|>", "<|eom_id|>",
}

func detectEndOfTurn(source string) string {
	for _, m := range endOfTurnMarkers {
		if strings.Contains(source, m) {
			return m
		}
	}
	return ""
}

// TokenIDer looks up the id of a token string; *tokenizer.Tokenizer
// implements it.
type TokenIDer interface {
	// TokenID returns the id of the token s and whether the vocabulary
	// has it.
	TokenID(s string) (int32, bool)
}

// StopTokens returns the ids that end generation: the eos_token_id values
// of generation_config.json (eosIDs, as checkpoint.Config.EOSTokenIDs
// reads them), then every end-of-turn token the template writes (Cohere's
// <|END_RESPONSE|> besides <|END_OF_TURN_TOKEN|>; <|endoftext|> too for
// ChatML templates, whose models end a turn on either, Qwen 3 among them),
// then the tokenizer_config eos_token, each if the vocabulary has it;
// without duplicates, in that order. So OLMo 3, whose config names only
// <|endoftext|>, stops on the <|im_end|> its template writes.
func (t *Template) StopTokens(vocab TokenIDer, eosIDs []int32) []int32 {
	var out []int32
	add := func(id int32) {
		for _, x := range out {
			if x == id {
				return
			}
		}
		out = append(out, id)
	}
	for _, id := range eosIDs {
		add(id)
	}
	var names []string
	for _, m := range append(endOfTurnMarkers, "<|END_RESPONSE|>") {
		if strings.Contains(t.source, m) {
			names = append(names, m)
		}
	}
	if strings.Contains(t.source, "<|im_end|>") {
		names = append(names, "<|endoftext|>")
	}
	for _, s := range append(names, t.special["eos_token"]) {
		if s == "" || vocab == nil {
			continue
		}
		if id, ok := vocab.TokenID(s); ok {
			add(id)
		}
	}
	return out
}
