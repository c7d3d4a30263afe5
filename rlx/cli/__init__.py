"""The command line: config discovery, help, logging and progress, error reports."""
