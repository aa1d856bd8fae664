#!/usr/bin/env python3
"""Helpers of ci/bench-formats.

  render-rst OUT FILES...        docutils' HTML of each file (OUT/<name>.html)
  compare FORMAT DIR DUMP HTML [--show-code-words]
                                 kapi's prose words against the reference's
                                 (and each code word kapi keeps as prose,
                                 with its file and line)
  speed KAPI DIR RULES ROUNDS NAME:SUB:BYTES...   MB/s, interleaved rounds

The reference's prose is the rendered HTML's text minus pre, code, tt, kbd,
samp, script, style and elements of class `literal` (docutils' inline
literals), links whose text is their target (a bare URL or e-mail
address, an Asciidoctor xref written with no text; not a name the author
wrote that the target happens to end with), docutils' system messages (its diagnostics, not the document's
text), admonition labels (Asciidoctor's `td.icon`, docutils' generic
`p.admonition-title`) and the header's author
and revision line (`#header .details`), and field names (docutils'
`th.field-name`, `dt` of `dl.field-list` and `dl.docinfo`; kapi masks
field names as markup). Words are runs of letters (with inner `'`), lowercased, compared
as multisets per file (kapi's RST text read with docutils' backslash
escapes applied, as docutils renders it; the PEPs' banner directives read
as the admonitions they are): agreement is the share of the reference's prose
words kapi also calls prose; code words in kapi's prose are the words kapi
keeps beyond the reference's prose that the reference renders only as
code in that file.
"""

import collections
import html.parser
import json
import os
import re
import statistics
import subprocess
import sys
import time

# docutils' own admonition labels (the label of `.. note::`), which the
# source does not write as prose.
LABELS = {"Note", "Warning", "Tip", "Hint", "Important", "Caution", "Danger", "Error",
          "Attention", "See also"}

RST_ESCAPE = re.compile(r"\\(.)", re.S)
WORD = re.compile(r"[A-Za-z](?:[A-Za-z']*[A-Za-z])?")


def words(text):
    return [w.lower() for w in WORD.findall(text.replace("\u2019", "'"))]


class Extract(html.parser.HTMLParser):
    """The text of an HTML fragment, split into prose and code."""

    CODE_TAGS = {"pre", "code", "tt", "kbd", "samp", "script", "style", "math"}
    VOID = {"br", "img", "hr", "meta", "link", "input", "col", "wbr", "source"}

    def __init__(self, fmt="asciidoc"):
        super().__init__(convert_charrefs=True)
        self.fmt = fmt
        self.stack = []  # (tag, kind) with kind in {None, "code", "skip"}
        self.prose = []
        self.code = []
        self.links = []  # (depth, href, [(kind, text)])

    def _kind(self, tag, attrs):
        a = dict(attrs)
        cls = (a.get("class") or "").split()
        if tag == "dt" and self.stack and self.stack[-1][0] == "dl" and (
                {"field-list", "docinfo"} & set(self.stack[-1][2])):
            return "skip"
        if tag in self.CODE_TAGS or "literal" in cls or "literal-block" in cls:
            return "code"
        if "system-message" in cls or "system-messages" in cls:
            return "skip"
        if tag == "td" and "icon" in cls:
            return "skip"
        if "admonition-title" in cls:
            return "label"
        if a.get("id") == "header" or "details" in cls:
            return "skip"
        if tag == "th" and "field-name" in cls:
            return "skip"
        if tag == "span" and "classifier-delimiter" in cls:
            return "skip"
        return None

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            return
        cls = (dict(attrs).get("class") or "").split()
        self.stack.append((tag, self._kind(tag, attrs), cls))
        if tag == "a" and dict(attrs).get("href"):
            # A link whose text is its target (a bare URL, an xref with no
            # text) shows an address, not prose: decided at its end.
            self.links.append((len(self.stack) - 1, dict(attrs)["href"], []))

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                while self.links and self.links[-1][0] >= i:
                    _, href, parts = self.links.pop()
                    text = "".join(t for _, t in parts).strip()
                    # An address: the link shows its target (a bare URL
                    # or e-mail address, or what Asciidoctor writes for an
                    # xref with no text: the target file `other.html`,
                    # `[id]`). A name the author wrote is prose even when
                    # the target ends with it (`xref:libvirt[libvirt]`,
                    # `{url-yelp}[Yelp^]`, `python/release-tools`_).
                    is_address = text and (
                        text == href or text.startswith(("http://", "https://"))
                        or (href.endswith(text) and re.search(r"[.@]", text))
                        or (text.startswith("[") and text.endswith("]")))
                    for kind, t in parts:
                        if self.links:
                            self.links[-1][2].append((kind, t))
                        elif kind == "code":
                            self.code.append(t)
                        elif not is_address:
                            self.prose.append(t)
                return

    def handle_data(self, data):
        kinds = {k for _, k, _ in self.stack}
        if "skip" in kinds:
            return
        if "label" in kinds and data.strip() in LABELS:
            return
        kind = "code" if "code" in kinds else "prose"
        if self.links:
            self.links[-1][2].append((kind, data))
        else:
            (self.code if kind == "code" else self.prose).append(data)


def render_rst(out, files):
    import docutils.core
    import docutils.utils
    from docutils import nodes
    from docutils.parsers.rst import Directive, directives, roles

    # Sphinx's roles and directives, as Sphinx reads them: cross-reference
    # roles show their title (`title <target>`) or their target as code;
    # code-like directives are literal; the others hold prose.
    text_roles = {"term", "abbr", "dfn", "guilabel", "menuselection"}

    def xref(name, rawtext, text, lineno, inliner, options=None, content=None):
        m = re.match(r"^(.*?)\s*<([^<>]*)>$", text, re.S)
        if m and m.group(1):
            return [nodes.inline(rawtext, m.group(1))], []
        if name in text_roles:
            return [nodes.inline(rawtext, text)], []
        return [nodes.literal(rawtext, text)], []

    for r in ("ref doc term numref any download keyword envvar option program file samp "
              "command mailheader makevar mimetype newsgroup regexp token func meth class "
              "mod attr data exc obj const abbr dfn guilabel menuselection kbd pep rfc "
              "py:func py:meth py:class py:mod py:attr py:data py:exc py:obj py:const "
              "c:func c:macro c:type c:member c:data c:var c:expr cpp:func cpp:class "
              "external pypi source issue gh").split():
        roles.register_local_role(r, xref)

    class Literal(Directive):
        has_content = True
        optional_arguments = 10
        final_argument_whitespace = True
        option_spec = None

        def run(self):
            return [nodes.literal_block("", "\n".join(self.content))]

    class Prose(Directive):
        has_content = True
        optional_arguments = 10
        final_argument_whitespace = True
        option_spec = None

        def run(self):
            node = nodes.container()
            self.state.nested_parse(self.content, self.content_offset, node)
            return [node]

    class Versioned(Prose):
        def run(self):
            node = nodes.container()
            words_after = (self.arguments[0].split(None, 1) + [""])[1] if self.arguments else ""
            if words_after:
                node += nodes.paragraph("", words_after)
            self.state.nested_parse(self.content, self.content_offset, node)
            return [node]

    class Titled(Prose):
        def run(self):
            node = nodes.container()
            if self.arguments:
                node += nodes.paragraph("", " ".join(self.arguments))
            self.state.nested_parse(self.content, self.content_offset, node)
            return [node]

    for d in ("code-block sourcecode literalinclude highlight productionlist toctree doctest "
              "testcode testoutput testsetup testcleanup graphviz autosummary automodule "
              "autoclass autofunction tabularcolumns prompt program-output").split():
        directives.register_directive(d, Literal)
    for d in "versionadded versionchanged deprecated versionremoved".split():
        directives.register_directive(d, Versioned)
    for d in "seealso centered glossary".split():
        directives.register_directive(d, Titled)
    for d in "only ifconfig hlist tab tabs index".split():
        directives.register_directive(d, Prose)
    # The PEPs' own banners (pep_sphinx_extensions: `.. withdrawn::`,
    # `.. canonical-doc::` ...) are admonitions whose body is prose; their
    # fixed sentences are generated, not in the source. docutils without
    # the extension would render them as an error's literal block (code).
    for d in ("pep-banner canonical-doc canonical-pypa-spec canonical-typing-spec rejected "
              "superseded withdrawn").split():
        directives.register_directive(d, Prose)

    settings = {"report_level": 5, "halt_level": 5, "file_insertion_enabled": False,
                "raw_enabled": False, "input_encoding": "utf-8", "syntax_highlight": "none",
                "warning_stream": open(os.devnull, "w")}
    for f in files:
        with open(f, encoding="utf-8") as fh:
            src = fh.read()
        try:
            parts = docutils.core.publish_parts(src, source_path=f, writer_name="html5",
                                                settings_overrides=settings)
            body = parts["html_body"]
        except Exception as e:  # a document docutils cannot read is left out
            print(f"docutils: {os.path.basename(f)}: {e}", file=sys.stderr)
            continue
        with open(os.path.join(out, os.path.basename(f) + ".html"), "w") as fh:
            fh.write(body)


def compare(fmt, base, dump, html_dir, show=False):
    shown = []
    agree = ref_total = kapi_total = code_in = 0
    files = 0
    worst = []
    code_words = collections.Counter()
    for line in open(dump):
        d = json.loads(line)
        page = os.path.join(html_dir, os.path.basename(d["path"]) + ".html")
        if not os.path.exists(page):
            continue
        raw = open(os.path.join(base, d["path"]), "rb").read()
        kapi = collections.Counter()
        where = collections.defaultdict(list)  # word -> byte offsets in kapi's prose
        for s, e in d.get("spans", []):
            text = raw[s:e].decode("utf-8", "replace")
            if fmt == "rst":
                # What docutils renders of kapi's source: a backslash
                # escapes the character after it and an escaped space is
                # removed (`haven\'t` is one word, `c:\MyApp\ will` reads
                # `MyAppwill`); inline literals, where backslashes stay,
                # are not in kapi's prose.
                text = RST_ESCAPE.sub(lambda m: "" if m.group(1).isspace() else m.group(1), text)
            kapi.update(words(text))
            if show:
                for m in WORD.finditer(text.replace("\u2019", "'")):
                    where[m.group().lower()].append(s + len(text[:m.start()].encode()))
        x = Extract(fmt)
        x.feed(open(page, encoding="utf-8").read())
        ref = collections.Counter(words(" ".join(x.prose)))
        code = collections.Counter(words(" ".join(x.code)))
        both = sum((ref & kapi).values())
        # Words kapi keeps as prose beyond the reference's prose that the
        # reference renders only as code in this file.
        extra = kapi - ref
        coded = collections.Counter({w: n for w, n in (extra & code).items() if w not in ref})
        files += 1
        agree += both
        ref_total += sum(ref.values())
        kapi_total += sum(kapi.values())
        code_in += sum(coded.values())
        code_words.update(coded)
        if show:
            for w in sorted(coded):
                for at in where[w]:
                    line = raw.count(b"\n", 0, at) + 1
                    text = raw.split(b"\n")[line - 1].decode("utf-8", "replace").strip()
                    shown.append(f"{d['path']}:{line}: {w}: {text[:160]}")
        worst.append((sum(ref.values()) - both, d["path"]))
    print(f"{fmt}: {files} files; reference prose words {ref_total}, kapi prose words {kapi_total}")
    print(f"{fmt}: prose-word agreement {100.0 * agree / max(ref_total, 1):.2f}% "
          f"(kapi's prose words the reference also renders as prose: "
          f"{100.0 * agree / max(kapi_total, 1):.2f}%)")
    print(f"{fmt}: code words in kapi's prose: {code_in} "
          f"({100.0 * code_in / max(kapi_total, 1):.3f}% of kapi's prose words)")
    for line in shown:
        print(f"{fmt}: code word: {line}")
    if os.environ.get("VERBOSE"):
        print(f"{fmt}: most missed words by file: {sorted(worst, reverse=True)[:8]}")
        print(f"{fmt}: commonest code words kept: {code_words.most_common(20)}")


def speed(kapi, base, rules, rounds, specs):
    specs = [s.split(":") for s in specs]
    times = {name: [] for name, _, _ in specs}
    cmd = lambda sub: [kapi, "check", "--rules", rules, "--format", "json", sub]
    for name, sub, _ in specs:  # warm-up (page cache)
        subprocess.run(cmd(sub), cwd=base, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(int(rounds)):
        for name, sub, _ in specs:
            t = time.perf_counter()
            subprocess.run(cmd(sub), cwd=base, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            times[name].append(time.perf_counter() - t)
    md = None
    for name, sub, size in specs:
        med = statistics.median(times[name])
        rate = int(size) / med / 1e6
        md = md or rate
        line = (f"{name}: {int(size) / 1e6:.2f} MB in {med * 1000:.1f} ms (median of {rounds}): "
                f"{rate:.1f} MB/s, {100.0 * rate / md:.0f}% of Markdown's")
        if os.environ.get("CALLGRIND", "1") != "0" and shutil_which("valgrind"):
            out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
                                 + cmd(sub), cwd=base, capture_output=True, text=True).stderr
            m = re.search(r"Collected : (\d+)", out)
            if m:
                line += f"; {int(m.group(1)) / int(size):.0f} instructions/byte (callgrind)"
        print(line)


def shutil_which(name):
    import shutil
    return shutil.which(name)


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "render-rst":
        render_rst(sys.argv[2], sys.argv[3:])
    elif what == "compare":
        compare(*sys.argv[2:6], show="--show-code-words" in sys.argv[6:])
    elif what == "speed":
        speed(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6:])
    else:
        sys.exit(__doc__)
