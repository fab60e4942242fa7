"""`python -m azjax.gtp_referee`: the entry point of `azjax gtp-referee`, whose code is
`azjax.commands.gtp_referee`. Nothing to import here."""

if __name__ == "__main__":
    from azjax.commands.errors import run_script
    from azjax.commands.gtp_referee import main

    run_script(main)
