"""An argparse help formatter that states each flag's default exactly once."""

from __future__ import annotations

import argparse


class DefaultsOnceHelpFormatter(argparse.HelpFormatter):
    """Append ``(default: X)`` to a flag's help unless the help already says ``default``.

    Unlike :class:`argparse.ArgumentDefaultsHelpFormatter` it adds nothing for
    flags without a default (``None`` or an empty string), for on/off switches (``store_true`` and
    ``store_false``, whose default is "off" by their nature) and for help texts
    that already state the default in words.
    """

    def _get_help_string(self, action: argparse.Action) -> str:
        help_text = action.help or ""
        if "default" in help_text.lower() or "%(default)" in help_text:
            return help_text
        if action.default is None or action.default is argparse.SUPPRESS or action.default == "":
            return help_text
        if isinstance(
            action,
            (argparse._StoreTrueAction, argparse._StoreFalseAction, argparse._HelpAction, argparse._VersionAction),
        ):
            return help_text
        if not action.option_strings:
            return help_text
        return help_text + " (default: %(default)s)"
