"""`python -m azjax.serve`: the entry point of `azjax serve`, whose code is
`azjax.commands.serve`. Nothing to import here."""

if __name__ == "__main__":
    from azjax.commands.errors import run_script
    from azjax.commands.serve import main

    run_script(main)
