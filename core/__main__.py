from tensorplug.cli import main

main()
