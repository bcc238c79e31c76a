from mergegate.main import main

raise SystemExit(main())
