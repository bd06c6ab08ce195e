from kafkagen.cli import main

raise SystemExit(main())
