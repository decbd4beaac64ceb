from costcalc.cli.app import main

main()
