from kafkagen.fuzz import main

raise SystemExit(main())
