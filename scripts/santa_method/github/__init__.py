"""The GitHub Action's driver (`action.yml` runs `python -m santa_method.github`)."""
