"""``seal``, the command line: the top layer, above ``seal_envs`` and ``seal_trl``.

``seal_cli.main`` builds the parser and runs a command. Commands that only need environments
(``env_commands``) never import torch; commands that run a model (``model_commands``) import
``seal_trl`` inside themselves. ``docs/cli.md`` documents each.
"""
