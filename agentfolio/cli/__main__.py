from agentfolio.cli import main

main()
