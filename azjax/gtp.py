"""`python -m azjax.gtp`: the entry point of `azjax gtp`, whose code is
`azjax.commands.gtp`. Nothing to import here."""

if __name__ == "__main__":
    from azjax.commands.errors import run_script
    from azjax.commands.gtp import main

    run_script(main)
