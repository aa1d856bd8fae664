#!/usr/bin/env python3
"""An independent reference for Vale's `substitution` rules, written from
Vale's documentation and its check (internal/check/substitution.go), not
from kapi's code, to measure how closely kapi agrees with Vale on real
packages.

What it implements, per style file (`extends: substitution`):
- the keys of `swap`, longest first, each a group of one alternation,
  between word boundaries: (?m)\\b(?:(key1)|(key2)|...)\\b (with `nonword:
  true`, no boundaries), ignoring case only with `ignorecase: true`;
- a match whose text is the replacement (equal to it when the replacement
  is a phrase of letters, digits, spaces and hyphens; otherwise matching it
  as a regular expression) is not an alert;
- the `level` (default `warning`) against `MinAlertLevel` (given);
- `scope: raw`: the keys are matched in the file as written (Vale's
  raw scope reads the file's lines, markup and code included), not in
  its prose.
Prose: what CommonMark reads as text (markdown-it-py, with tables; see
`mask`), as Vale reads the HTML its CommonMark parser (goldmark) renders;
everything else masked by spaces, so lines keep their numbers.
The `regex` module stands in for Vale's regexp2 (both backtracking engines
with look-around).

usage: vale-reference.py STYLE_DIR... CORPUS_DIR [--min-level warning]
prints one finding a line: path<TAB>line<TAB>matched<TAB>rule"""
import os
import re
import sys

import regex
import yaml
from markdown_it import MarkdownIt

LEVELS = {'suggestion': 0, 'warning': 1, 'error': 2}


def blank(m):
    return re.sub(r'[^\n]', ' ', m.group(0))


FRONT = re.compile(r'\A(---|\+\+\+)\n.*?\n(?:\1|\.\.\.)[ \t]*\n', re.S)
COMMENT = re.compile(r'<!--.*?-->', re.S)
SHORTCODE = re.compile(r'\{\{[<%].*?[%>]\}\}', re.S)
URL = re.compile(r'\b(?:https?|ftp)://[^\s)>\]]+|\bwww\.[^\s)>\]]+')
TAG = re.compile(r'</?[A-Za-z][^>\n]*>')


MD = MarkdownIt('commonmark').enable('table')
PIECE = re.compile(r'\w+|\s+|.', re.S)


def mask(text):
    """The prose of a Markdown file as CommonMark reads it (markdown-it-py,
    with tables), as Vale reads the HTML goldmark renders: the text of
    paragraphs, headings, list items and table cells, kept in place; the
    rest (front matter, code blocks and spans, HTML tags and comments,
    link targets, autolinks, reference definitions, image descriptions,
    emphasis delimiters, escapes) blanked, but for the text of code spans,
    which Vale reads as `*` characters. Hugo shortcodes and bare URLs
    are blanked too (Vale's TokenIgnores as documentation projects set
    them). The inline text markdown-it gives has no offsets, so each piece
    is found in the block's source lines in order."""
    text = FRONT.sub(blank, text)
    starts = [0] + [m.end() for m in re.finditer('\n', text)]
    out = [c if c == '\n' else ' ' for c in text]

    def keep(i, j):
        out[i:j] = text[i:j]

    def span(m):
        first = starts[m[0]]
        last = starts[m[1]] if m[1] < len(starts) else len(text)
        return first, last

    done = 0
    for t in MD.parse(text):
        if t.type == 'html_block' and t.map:
            first, last = span(t.map)
            block = COMMENT.sub(blank, text[first:last])
            block = TAG.sub(blank, block)
            out[first:last] = block
        if t.type != 'inline' or not t.map:
            continue
        first, last = span(t.map)
        # Table cells share their row's lines: each starts where the last ended.
        pos, skip = max(first, done if done < last else first), 0
        for c in t.children:
            if c.type in ('link_open',) and c.markup == 'autolink' or c.type == 'image':
                skip += 1 if c.type == 'link_open' else 0
                if c.type == 'image':
                    i = text.find(c.content, pos, last) if c.content else -1
                    if i >= 0:
                        pos = i + len(c.content)
                continue
            if c.type == 'link_close' and skip:
                skip -= 1
                continue
            if c.type == 'code_inline':
                # CommonMark turns a code span's line endings into spaces.
                words = [re.escape(w) for w in c.content.split(' ')]
                m = re.compile(r'\s+'.join(words)).search(text, pos, last)
                if m:
                    # Vale reads a code span as `*` characters (its
                    # `Substitute(txt, txt, '*')` for tt, code and kbd), not
                    # blanks: `\s*--` cannot run over one.
                    out[m.start():m.end()] = [c if c == '\n' else '*' for c in text[m.start():m.end()]]
                    pos = m.end()
                continue
            if c.type != 'text' or skip or not c.content:
                continue
            i = text.find(c.content, pos, last)
            if i >= 0:
                keep(i, i + len(c.content))
                pos = i + len(c.content)
                continue
            # An escape or an entity: find the text piece by piece.
            for piece in PIECE.findall(c.content):
                i = text.find(piece, pos, last)
                if i >= 0:
                    keep(i, i + len(piece))
                    pos = i + len(piece)
        done = pos
    text = ''.join(out)
    for rx in (SHORTCODE, URL):
        text = rx.sub(blank, text)
    return text


def is_phrase(s):
    return all(c.isalpha() or c.isdigit() or c in ' -' for c in s)


def same(expected, observed):
    if is_phrase(expected):
        return expected == observed
    try:
        return regex.fullmatch(f'(?:{expected})', observed) is not None
    except regex.error:
        return expected == observed


def non_capturing(key):
    return regex.sub(r'(?<!\\)\((?!\?)', '(?:', key)


class StrictLoader(yaml.SafeLoader):
    """YAML as Vale's Go reader takes it: a key twice in one mapping is an
    error, and Vale refuses the whole style (PyYAML would keep the last)."""


def _no_duplicates(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f'duplicate key {key!r}', key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _no_duplicates)


def load_rules(style_dir, min_level):
    rules = []
    for name in sorted(os.listdir(style_dir)):
        if not name.endswith('.yml'):
            continue
        with open(os.path.join(style_dir, name), encoding='utf-8-sig') as f:
            try:
                doc = yaml.load(f, Loader=StrictLoader)
            except yaml.YAMLError as e:
                print(f'# {name}: Vale refuses the style: {e}', file=sys.stderr)
                continue
        if not isinstance(doc, dict) or doc.get('extends') != 'substitution':
            continue
        level = doc.get('level') or 'warning'
        if LEVELS[level] < LEVELS[min_level]:
            continue
        swap = {str(k): str(v) for k, v in (doc.get('swap') or {}).items()}
        if not swap:
            # Nothing to swap (a package's placeholder style): Vale
            # compiles no pattern from it, and an empty alternation would
            # match the empty string everywhere.
            continue
        keys = sorted(swap, key=len, reverse=True)
        body = '|'.join(f'({non_capturing(k)})' for k in keys)
        template = r'(?m)(?:{})' if doc.get('nonword') else r'(?m)\b(?:{})\b'
        flags = regex.IGNORECASE if doc.get('ignorecase') else 0
        try:
            pattern = regex.compile(template.format(body), flags | regex.V0)
        except regex.error as e:
            print(f'# {name}: {e}', file=sys.stderr)
            continue
        raw = str(doc.get('scope') or '').strip() == 'raw'
        rules.append((name[:-4], pattern, [swap[k] for k in keys], raw))
    return rules


def main():
    args = sys.argv[1:]
    min_level = 'warning'
    if '--min-level' in args:
        i = args.index('--min-level')
        min_level = args[i + 1]
        del args[i:i + 2]
    *style_dirs, corpus = args
    rules = [r for d in style_dirs for r in load_rules(d, min_level)]
    for dp, dn, fn in os.walk(corpus):
        dn.sort()
        for f in sorted(fn):
            if not f.endswith('.md'):
                continue
            path = os.path.join(dp, f)
            rel = os.path.relpath(path, os.path.dirname(corpus.rstrip('/')))
            written = open(path, encoding='utf-8', errors='replace').read()
            text = mask(written)
            starts = [0] + [m.end() for m in re.finditer('\n', text)]
            import bisect
            for name, pattern, repl, raw in rules:
                for m in pattern.finditer(written if raw else text):
                    group = next(i for i, g in enumerate(m.groups()) if g is not None)
                    observed = m.group(0).strip()
                    if not observed or same(repl[group], observed):
                        continue
                    line = bisect.bisect_right(starts, m.start())
                    # A match across a line end is one finding, on the
                    # line where it starts.
                    observed = ' '.join(observed.split())
                    print(f'{rel}\t{line}\t{observed}\t{name}')


if __name__ == '__main__':
    main()
