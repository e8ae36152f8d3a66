from molt.cli import main

main()
