from ffnlab.cli import main

main()
