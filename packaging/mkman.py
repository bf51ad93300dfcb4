#!/usr/bin/env python3
"""Writes a man page (roff, man macros) from sections of the project's markdown docs.

    mkman.py OUT NAME SECTION VERSION SUMMARY [--see-also PAGE ...] SOURCE...

Each SOURCE adds text to the page, in order:
  FILE            the text before FILE's first level-2 heading, as DESCRIPTION
  FILE#HEADING    that section (any level) with its subsections: a section named NAME is
                  the page itself, its subsections become the page's sections (SYNOPSIS...);
                  any other becomes one section titled HEADING, its subsections subsections
  FILE#HEADING=T  as FILE#HEADING, titled T
  env:FILE        ENVIRONMENT, from FILE holding `bagua-info --env`'s output (any
                  current values in it are left out)

The markdown subset the docs use is understood: headings, paragraphs, fenced and indented
code, bullet and numbered lists, pipe tables (rendered as tagged paragraphs), `code`,
**bold**, *emphasis* and [links](target).
"""
import argparse
import re
import sys

HEADING = re.compile(r'^(#{1,6})\s+(.*?)\s*#*\s*$')
LIST_ITEM = re.compile(r'^(\s*)([-*+]|\d+[.)])\s+(.*)$')


def escape(text):
    """Escapes roff's specials in running text."""
    return text.replace('\\', '\\e')


def code_text(text):
    return escape(text).replace('-', '\\-')


def inline(text):
    """Converts inline markdown to roff font changes."""
    out = []
    pos = 0
    pattern = re.compile(r'`([^`]+)`|\*\*(.+?)\*\*|(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])'
                         r'|\[([^\]]+)\]\(([^)]+)\)')
    for m in pattern.finditer(text):
        out.append(escape(text[pos:m.start()]))
        code, bold, emph, link_text, target = m.groups()
        if code is not None:
            out.append('\\fB' + code_text(code) + '\\fR')
        elif bold is not None:
            out.append('\\fB' + inline(bold) + '\\fR')
        elif emph is not None:
            out.append('\\fI' + inline(emph) + '\\fR')
        else:
            shown = inline(link_text)
            out.append(shown if link_text == target else f'{shown} ({escape(target)})')
        pos = m.end()
    out.append(escape(text[pos:]))
    return ''.join(out)


def starts_list_in_paragraph(line):
    """As in CommonMark, only a bullet or an ordered list starting at 1 ends a paragraph
    (so a wrapped "2021) ..." stays text)."""
    m = LIST_ITEM.match(line)
    return bool(m) and (m.group(2) in '-*+' or m.group(2) in ('1.', '1)'))


def text_line(line):
    """One line of running text: a leading control character is neutralised."""
    return '\\&' + line if line.startswith(('.', "'")) else line


def split_row(line):
    return [cell.strip() for cell in line.strip().strip('|').split('|')]


def render(lines, sh_level):
    """Converts markdown lines to roff: headings up to level `sh_level` become .SH, deeper
    ones .SS."""
    out = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        heading = HEADING.match(line)
        if not stripped:
            i += 1
        elif heading:
            level = len(heading.group(1))
            title = inline(heading.group(2))
            out.append(('.SH ' + title.upper()) if level <= sh_level else ('.SS ' + title))
            i += 1
        elif stripped.startswith('```'):
            block = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith('```'):
                block.append(lines[i])
                i += 1
            i += 1
            out += code_block(block)
        elif line.startswith('    '):
            block = []
            while i < len(lines) and (lines[i].startswith('    ') or not lines[i].strip()):
                block.append(lines[i][4:])
                i += 1
            while block and not block[-1].strip():
                block.pop()
            out += code_block(block)
        elif stripped.startswith('|'):
            rows = []
            while i < len(lines) and lines[i].strip().startswith('|'):
                rows.append(split_row(lines[i]))
                i += 1
            out += table(rows)
        elif LIST_ITEM.match(line):
            while i < len(lines) and LIST_ITEM.match(lines[i]):
                marker, first = LIST_ITEM.match(lines[i]).group(2, 3)
                item = [first]
                i += 1
                while (i < len(lines) and lines[i].strip() and lines[i].startswith(' ')
                       and not LIST_ITEM.match(lines[i])):
                    item.append(lines[i].strip())
                    i += 1
                tag = '\\(bu' if marker in '-*+' else marker
                out.append(f'.IP {tag} 4')
                out.append(text_line(inline(' '.join(item))))
                while i < len(lines) and not lines[i].strip() and i + 1 < len(lines) \
                        and LIST_ITEM.match(lines[i + 1]):
                    i += 1
        else:
            paragraph = []
            while (i < len(lines) and lines[i].strip() and not HEADING.match(lines[i])
                   and not lines[i].strip().startswith(('```', '|'))
                   and not starts_list_in_paragraph(lines[i])):
                paragraph.append(lines[i].strip())
                i += 1
            out.append('.PP')
            out.append(text_line(inline(' '.join(paragraph))))
    return out


def code_block(block):
    out = ['.PP', '.RS 4', '.nf']
    out += ['\\&' + code_text(line) for line in block]
    out += ['.fi', '.RE']
    return out


def table(rows):
    """A pipe table as tagged paragraphs: the first cell tags "header: cell" for the rest."""
    header, body = rows[0], [r for r in rows[1:] if not all(set(c) <= set('-: ') for c in r)]
    out = []
    for row in body:
        out.append('.TP')
        out.append(text_line(inline(row[0])))
        rest = [f'{inline(h)}: {inline(c)}' for h, c in zip(header[1:], row[1:]) if c]
        out.append(text_line('; '.join(rest)))
    return out


def environment(path):
    """bagua-info --env's list ("NAME default=VALUE[  current=...]" and an indented
    description) as tagged paragraphs."""
    out = ['.SH ENVIRONMENT']
    with open(path, encoding='utf-8') as f:
        for line in f:
            m = re.match(r'^(\w+)\s+default=(.*?)(?:  current=.*)?$', line.rstrip('\n'))
            if m:
                value = f' (default \\fB{code_text(m.group(2))}\\fR)' if m.group(2) else ''
                out += ['.TP', f'\\fB{m.group(1)}\\fR{value}']
            elif line.startswith('    '):
                out.append(text_line(escape(line.strip())))
    return out


def section(path, heading):
    """Lines of the section titled `heading` in `path` (without its heading line) and its
    level; heading None selects the text before the first level-2 heading."""
    with open(path, encoding='utf-8') as f:
        lines = f.read().splitlines()
    if heading is None:
        body = []
        for line in lines:
            m = HEADING.match(line)
            if m and len(m.group(1)) >= 2:
                break
            if not (m and len(m.group(1)) == 1):
                body.append(line)
        return body, 1
    for start, line in enumerate(lines):
        m = HEADING.match(line)
        if m and m.group(2) == heading:
            level = len(m.group(1))
            end = start + 1
            fenced = False
            while end < len(lines):
                fenced ^= lines[end].strip().startswith('```')
                other = HEADING.match(lines[end])
                if not fenced and other and len(other.group(1)) <= level:
                    break
                end += 1
            return lines[start + 1:end], level
    sys.exit(f'mkman.py: {path} has no section "{heading}"')


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('out')
    parser.add_argument('name')
    parser.add_argument('section')
    parser.add_argument('version')
    parser.add_argument('summary')
    parser.add_argument('sources', nargs='+')
    parser.add_argument('--see-also', nargs='*', default=[])
    args = parser.parse_args()

    page = [f'.TH {args.name.upper()} {args.section} "" "bagua {args.version}" "bagua manual"',
            '.SH NAME', f'{args.name} \\- {escape(args.summary)}']
    for source in args.sources:
        if source.startswith('env:'):
            page += environment(source[4:])
            continue
        path, _, rest = source.partition('#')
        heading, _, title = rest.partition('=')
        lines, level = section(path, heading or None)
        if not rest:
            page += ['.SH DESCRIPTION'] + render(lines, level)
        elif heading == args.name and not title:
            page += render(lines, level + 1)
        else:
            page += ['.SH ' + inline(title or heading).upper()] + render(lines, level)
    if args.see_also:
        page += ['.SH SEE ALSO', ', '.join(
            re.sub(r'^(.*)\((\w+)\)$', r'\\fB\1\\fR(\2)', p) for p in args.see_also)]
    with open(args.out, 'w', encoding='utf-8') as f:
        f.write('\n'.join(page) + '\n')


if __name__ == '__main__':
    main()
