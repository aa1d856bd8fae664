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
- the `level` (default `warning`) against `MinAlertLevel` (given).
Prose: Markdown with front matter, fenced and indented code, inline code,
HTML comments and tags, Hugo shortcodes, autolinks, URLs, link targets and
reference definitions masked by spaces (a simple masker of its own).
The `regex` module stands in for Vale's regexp2 (both backtracking engines
with look-around).

usage: vale-reference.py STYLE_DIR CORPUS_DIR [--min-level warning]
prints one finding a line: path<TAB>line<TAB>matched<TAB>rule"""
import os
import re
import sys

import regex
import yaml

LEVELS = {'suggestion': 0, 'warning': 1, 'error': 2}


def blank(m):
    return re.sub(r'[^\n]', ' ', m.group(0))


FRONT = re.compile(r'\A(---|\+\+\+)\n.*?\n(?:\1|\.\.\.)[ \t]*\n', re.S)
COMMENT = re.compile(r'<!--.*?-->', re.S)
SHORTCODE = re.compile(r'\{\{[<%].*?[%>]\}\}', re.S)
LINK_TARGET = re.compile(r'\]\([^)\n]*\)|\]\[[^\]\n]*\]')
REF_DEF = re.compile(r'(?m)^ {0,3}\[[^\]\n]+\]:[^\n]*')
AUTOLINK = re.compile(r'<[a-zA-Z][a-zA-Z0-9+.-]*:[^>\s]*>|<[^>\s@]+@[^>\s]+>')
URL = re.compile(r'\b(?:https?|ftp)://[^\s)>\]]+|\bwww\.[^\s)>\]]+')
TAG = re.compile(r'</?[A-Za-z][^>\n]*>')
INLINE_CODE = re.compile(r'(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)', re.S)


def mask_blocks(text):
    """Fenced code, and indented code outside lists after a blank line."""
    out, fence, prev_blank, in_list = [], None, True, False
    for ln in text.split('\n'):
        m = re.match(r' {0,3}(`{3,}|~{3,})', ln)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                    and ln.strip() == m.group(1):
                fence = None
            out.append(' ' * len(ln))
            continue
        if m and not (m.group(1)[0] == '`' and '`' in ln[m.end():]):
            fence = m.group(1)
            out.append(' ' * len(ln))
            continue
        if not ln.strip():
            out.append(ln)
            prev_blank = True
            continue
        if re.match(r' {0,3}(?:[-*+]|\d+[.)])\s', ln):
            in_list = True
        elif not ln.startswith((' ', '\t')) and prev_blank:
            in_list = False
        if prev_blank and not in_list and re.match(r'(?: {4}|\t)', ln):
            out.append(' ' * len(ln))
            continue  # an indented code block stays one until a blank line
        prev_blank = False
        out.append(ln)
    return '\n'.join(out)


def mask(text):
    text = FRONT.sub(blank, text)
    text = mask_blocks(text)
    text = COMMENT.sub(blank, text)
    text = INLINE_CODE.sub(blank, text)
    for rx in (SHORTCODE, AUTOLINK, URL, LINK_TARGET, REF_DEF, TAG):
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


def load_rules(style_dir, min_level):
    rules = []
    for name in sorted(os.listdir(style_dir)):
        if not name.endswith('.yml'):
            continue
        with open(os.path.join(style_dir, name), encoding='utf-8-sig') as f:
            doc = yaml.safe_load(f)
        if not isinstance(doc, dict) or doc.get('extends') != 'substitution':
            continue
        level = doc.get('level') or 'warning'
        if LEVELS[level] < LEVELS[min_level]:
            continue
        swap = {str(k): str(v) for k, v in (doc.get('swap') or {}).items()}
        keys = sorted(swap, key=len, reverse=True)
        body = '|'.join(f'({non_capturing(k)})' for k in keys)
        template = r'(?m)(?:{})' if doc.get('nonword') else r'(?m)\b(?:{})\b'
        flags = regex.IGNORECASE if doc.get('ignorecase') else 0
        try:
            pattern = regex.compile(template.format(body), flags | regex.V0)
        except regex.error as e:
            print(f'# {name}: {e}', file=sys.stderr)
            continue
        rules.append((name[:-4], pattern, [swap[k] for k in keys]))
    return rules


def main():
    style_dir, corpus = sys.argv[1], sys.argv[2]
    min_level = 'warning'
    if '--min-level' in sys.argv:
        min_level = sys.argv[sys.argv.index('--min-level') + 1]
    rules = load_rules(style_dir, min_level)
    for dp, dn, fn in os.walk(corpus):
        dn.sort()
        for f in sorted(fn):
            if not f.endswith('.md'):
                continue
            path = os.path.join(dp, f)
            rel = os.path.relpath(path, os.path.dirname(corpus.rstrip('/')))
            text = mask(open(path, encoding='utf-8', errors='replace').read())
            starts = [0] + [m.end() for m in re.finditer('\n', text)]
            import bisect
            for name, pattern, repl in rules:
                for m in pattern.finditer(text):
                    group = next(i for i, g in enumerate(m.groups()) if g is not None)
                    observed = m.group(0).strip()
                    if not observed or same(repl[group], observed):
                        continue
                    line = bisect.bisect_right(starts, m.start())
                    print(f'{rel}\t{line}\t{observed}\t{name}')


if __name__ == '__main__':
    main()
