from zluda_runner.cli import main

main()
