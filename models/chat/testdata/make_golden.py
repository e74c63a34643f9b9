#!/usr/bin/python3
"""Renders the golden chat prompts for models/chat with Python jinja2 in the
environment Hugging Face transformers' apply_chat_template builds
(transformers/utils/chat_template_utils.py: _compile_jinja_template and
render_jinja_template):

  ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
      extensions=[AssistantTracker, jinja2.ext.loopcontrols])
  filters["tojson"] = json.dumps(x, ensure_ascii=False, indent, separators, sort_keys)
  globals["raise_exception"] raises TemplateError(message)
  globals["strftime_now"] = datetime.now().strftime(format)
  render(messages=..., tools=None, documents=None, add_generation_prompt=...,
         **special_tokens, **extra)

Usage, from this directory, with Debian's python3-jinja2 (3.1.2):
  apt-get install -y python3-jinja2 && /usr/bin/python3 make_golden.py
Reads conversations.json and templates/*.jinja, writes golden_renderings.json.
"""
import json
from datetime import datetime

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class AssistantTracker(Extension):
    # transformers' {% generation %} block: renders its body unchanged (it
    # also records offsets for assistant masks, which this script does not use).
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return datetime.now().strftime(format)


env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker, loopcontrols])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception
env.globals["strftime_now"] = strftime_now

doc = json.load(open("conversations.json", encoding="utf-8"))
out = []
for tname, tinfo in doc["templates"].items():
    compiled = env.from_string(open(tinfo["file"], encoding="utf-8").read())
    for cname, messages in doc["conversations"].items():
        for extra_name, extra in doc["extras"].items():
            if extra_name != "default" and tname != "qwen3":
                continue
            for agp in (True, False):
                entry = {"template": tname, "conversation": cname, "extra": extra_name, "add_generation_prompt": agp}
                try:
                    entry["output"] = compiled.render(messages=messages, tools=None, documents=None,
                                                      add_generation_prompt=agp, **tinfo["special_tokens"], **extra)
                except jinja2.exceptions.TemplateError as e:
                    entry["error"] = str(e)
                out.append(entry)
with open("golden_renderings.json", "w", encoding="utf-8") as f:
    json.dump({"jinja2": jinja2.__version__, "renderings": out}, f, ensure_ascii=False, indent=1)
    f.write("\n")
print(len(out), "renderings")
