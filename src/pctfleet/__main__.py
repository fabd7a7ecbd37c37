from pctfleet.cli.entry import console

console()
