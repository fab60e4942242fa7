"""`python -m azjax.play`: the entry point of `azjax play`, whose code is
`azjax.commands.play`. Nothing to import here."""

if __name__ == "__main__":
    from azjax.commands.errors import run_script
    from azjax.commands.play import main

    run_script(main)
