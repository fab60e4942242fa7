"""`python -m azjax.export`: the entry point of `azjax export`, whose code is
`azjax.commands.export`. Nothing to import here."""

if __name__ == "__main__":
    from azjax.commands.errors import run_script
    from azjax.commands.export import main

    run_script(main)
