"""msdebug's magics, one module per group."""
