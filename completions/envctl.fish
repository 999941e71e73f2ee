complete --keep-order --exclusive --command envctl --arguments "(COMPLETE=fish envctl -- (commandline --current-process --tokenize --cut-at-cursor) (commandline --current-token))"
