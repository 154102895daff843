"""What every report is made of (blocks, numbers, charts, the views several kinds share) and its
two formatters, markdown and HTML. Producers live with what they show: each kind in its module,
a run's report in runs/document.py, merge, diff, the job summary, bisect."""
