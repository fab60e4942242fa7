"""`python -m azjax.league`: the entry point of `azjax league`, whose code is
`azjax.commands.league`. Nothing to import here."""

if __name__ == "__main__":
    from azjax.commands.errors import run_script
    from azjax.commands.league import main

    run_script(main)
