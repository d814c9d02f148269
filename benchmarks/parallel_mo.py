#!/usr/bin/env python
"""Parallel English / Russian / Chinese text from the gettext catalogues Debian packages ship.

    python benchmarks/parallel_mo.py --out ../shared/parallel            # the default set of catalogues
    python tokens.py tiktoken:gpt2 --eval en=../shared/parallel/en.txt --eval ru=../shared/parallel/ru.txt \\
        --eval zh=../shared/parallel/zh.txt --reference en --parallel

A ``.mo`` file maps each English message (msgid) to its translation (msgstr).  For the messages translated in
*both* ``/usr/share/locale/ru/LC_MESSAGES/NAME.mo`` and ``/usr/share/locale/zh_CN/LC_MESSAGES/NAME.mo`` this
writes en.txt, ru.txt and zh.txt, one message a document (documents separated by ``<|endoftext|>`` lines), in the
same order in all three: document ``i`` of each file is the same message, so that ``tokens.py --parallel`` can
take raw token ratios (Petrov et al. 2023's parity).  Plural forms, empty messages, the header, messages with a
context, and messages that are a separator line are left out; ``%s``-style format strings are kept as they are.

The default catalogues and the Debian packages they come from (``dpkg -S``): :data:`CATALOGUES`.
"""

from __future__ import annotations

import argparse
import gettext
import sys
from pathlib import Path

LOCALE = Path("/usr/share/locale")
#: Catalogue name -> the Debian package that ships both its ru and zh_CN files (dpkg -S).
CATALOGUES = {
    "apt": "apt",
    "bash": "bash",
    "coreutils": "coreutils",
    "diffutils": "diffutils",
    "dpkg": "dpkg",
    "findutils": "findutils",
    "grep": "grep",
    "gettext-tools": "gettext",
    "git": "git",
    "libc": "libc-l10n",
    "make": "make",
}
LANGS = {"ru": "ru", "zh": "zh_CN"}
EOT = "<|endoftext|>"


def catalogue(path: Path) -> dict[str, str]:
    """msgid -> msgstr of one .mo file (singular messages without context, both non-empty)."""
    with open(path, "rb") as f:
        cat = gettext.GNUTranslations(f)._catalog
    out = {}
    for k, v in cat.items():
        if isinstance(k, str) and k and "\x04" not in k and isinstance(v, str) and v.strip():
            out[k] = v
    return out


def _usable(*texts: str) -> bool:
    return all(t.strip() and all(line.strip() != EOT for line in t.split("\n")) for t in texts)


def parallel_messages(names, locale: Path = LOCALE) -> list[tuple[str, str, str, str]]:
    """``(catalogue, en, ru, zh)`` for every message translated in both languages, in catalogue then msgid order.

    Raises:
        FileNotFoundError: a catalogue missing in one of the languages (named).
    """
    rows = []
    for name in names:
        cats = {}
        for short, lang in LANGS.items():
            path = locale / lang / "LC_MESSAGES" / f"{name}.mo"
            if not path.is_file():
                raise FileNotFoundError(f"{path}: no such file (Debian package {CATALOGUES.get(name, '?')})")
            cats[short] = catalogue(path)
        for msgid in sorted(set(cats["ru"]) & set(cats["zh"])):
            ru, zh = cats["ru"][msgid], cats["zh"][msgid]
            if _usable(msgid, ru, zh) and ru != msgid and zh != msgid:
                rows.append((name, msgid, ru, zh))
    return rows


def write_parallel(out: Path, names, locale: Path = LOCALE) -> dict[str, int]:
    """Write ``out/{en,ru,zh}.txt``; returns the messages per catalogue."""
    rows = parallel_messages(names, locale)
    if not rows:
        raise ValueError(f"no message is translated in both ru and zh_CN in {', '.join(names)}")
    out.mkdir(parents=True, exist_ok=True)
    for k, lang in enumerate(("en", "ru", "zh"), start=1):
        text = f"\n{EOT}\n".join(r[k].replace("\r\n", "\n").strip("\n") for r in rows) + "\n"
        tmp = out / f".{lang}.txt.tmp"
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(out / f"{lang}.txt")
    counts: dict[str, int] = {}
    for r in rows:
        counts[r[0]] = counts.get(r[0], 0) + 1
    return counts


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="parallel_mo.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="parallel", help="folder for en.txt, ru.txt, zh.txt")
    p.add_argument("--locale", default=str(LOCALE), help="the locale root holding ru/ and zh_CN/")
    p.add_argument("--catalogues", default=",".join(CATALOGUES), help="catalogue names, separated by commas")
    a = p.parse_args(argv)
    try:
        counts = write_parallel(Path(a.out), [n for n in a.catalogues.split(",") if n], Path(a.locale))
    except (OSError, ValueError) as e:
        print(f"parallel_mo.py: error: {e}", file=sys.stderr)
        return 1
    print(f"{sum(counts.values()):,} messages in {a.out}/{{en,ru,zh}}.txt: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
