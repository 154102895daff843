"""The command line: the console script, the invoke tasks' shared spec, and the commands behind them."""
