"""Many runs of one experiment: ``lab explore`` draws concrete schedules from a fault space
(``schedules``, which also holds what the three share: one experiment text run as a stored
run), ``lab shrink`` finds a smallest failing schedule (``shrink``), ``lab search`` where over
one knob an expectation flips (``search``)."""
