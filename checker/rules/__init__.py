"""One module per checker rule, named qtNNN_<slug>.py."""
