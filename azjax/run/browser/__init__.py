"""The browser page's side of play: the games it plays against an agent (`web_games`,
for `azjax serve`) and a position drawn with the agent's search on it
(`analysis_board`).
"""
