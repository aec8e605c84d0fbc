"""Course authoring, outside the measurement core: decks generated from the labs' own
files and datasets (`leaklab slides`). Nothing here runs during a run or a grade."""
