"""The command-line interface: thin Typer commands over the library."""
