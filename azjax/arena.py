"""`python -m azjax.arena`: the entry point of `azjax arena`, whose code is
`azjax.commands.arena`. Nothing to import here."""

if __name__ == "__main__":
    from azjax.commands.errors import run_script
    from azjax.commands.arena import main

    run_script(main)
