from pctfleet.cli.main import console

console()
