from pctfleet.cli.main import main

main()
