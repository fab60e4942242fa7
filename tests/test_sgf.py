"""Go games as SGF (`azjax/sgf.py`), recorded matches (`play_match(..., record=True)`, both
loops), and `--sgf DIR` in the arena and the league.

Every SGF written here is read back with sgfmill, an independent SGF parser and Go board:
its moves are replayed on sgfmill's board (captures included) and the final position, the
area count and the result are compared with those of envs.go.
"""

from __future__ import annotations

import json
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sgfmill import boards
from sgfmill import sgf as sgfmill_sgf  # required (the test extras): no silent skip

import envs
from azjax import TrainConfig
from azjax.commands.arena import main as arena_main
from azjax.commands.league import main as league_main
from azjax.core.players import Player
from azjax.evaluation import match
from azjax.evaluation.baselines import random_player
from azjax.evaluation.league import pair_dirs, round_robin, run_league
from azjax.evaluation.match import play_match, record_plies
from azjax.go import sgf
from azjax.run.directory.run_dir import RunDir

N_GAMES, OPENING = 6, 2


@pytest.fixture(scope="module")
def go5():
    return envs.make("go", size=5)


def parse(text: str):
    return sgfmill_sgf.Sgf_game.from_bytes(text.encode())


def sgfmill_final(game):
    """sgfmill's replay of a parsed game: (board as our int8 [size*size] with row 0 the
    top line, the moves as (colour, point or None), Black area - White area)."""
    size = game.get_size()
    board = boards.Board(size)
    moves = []
    for node in game.get_main_sequence()[1:]:
        colour, point = node.get_move()
        moves.append((colour, point))
        if point is not None:
            board.play(point[0], point[1], colour)
    ours = np.full(size * size, -1, np.int8)
    for colour, (row, col) in board.list_occupied_points():
        ours[(size - 1 - row) * size + col] = 0 if colour == "b" else 1  # sgfmill: row 0 at the bottom
    return ours, moves, board.area_score()


def env_final_boards(env, moves):
    """Our env's final boards [N, size*size] after the recorded moves, stepped here."""
    states = jax.vmap(env.init)(jax.random.split(jax.random.key(1), len(moves)))
    step = match._compiled_rules(env)[1]  # the host loop's jitted vmapped step
    for ply in range(moves.shape[1]):
        states = step(states, jnp.asarray(moves[:, ply]))
    return np.asarray(states.board), np.asarray(states.terminated)


def check_match_files(env, result, texts):
    """Every SGF of a recorded match agrees with sgfmill: players by seat, opening moves,
    final board, passes and a result that gives A the match's result."""
    finals, terminated = env_final_boards(env, result.moves)
    passes = 0
    for i, text in enumerate(texts):
        game = parse(text)
        root = game.get_root()
        assert game.get_size() == env.size and game.get_komi() == env.komi
        assert root.get("FF") == 4 and root.get("GM") == 1
        a_black = result.a_seat[i] == 0
        assert game.get_player_name("b") == (result.name_a if a_black else result.name_b)
        assert game.get_player_name("w") == (result.name_b if a_black else result.name_a)
        board, moves, area = sgfmill_final(game)
        played = result.moves[i][result.moves[i] >= 0]
        assert len(moves) == len(played)
        assert [c for c, _ in moves] == ["b", "w"] * (len(moves) // 2) + ["b"] * (len(moves) % 2)
        for (colour, point), action in zip(moves, played):  # the opening plies included
            if action == env.size ** 2:
                assert point is None
                passes += 1
            else:
                r, c = divmod(int(action), env.size)
                assert point == (env.size - 1 - r, c)
        assert f"the first {result.opening_plies} moves were random" in root.get("GC")
        np.testing.assert_array_equal(board, finals[i])
        assert terminated[i]
        assert root.get("RE") == sgf.sgf_result(area - env.komi)
        black_won = area - env.komi > 0
        assert result.results[i] == (1 if black_won == a_black else -1)
        # A's points margin: sgfmill's area count with komi, from A's side.
        assert result.margins[i] == (area - env.komi) * (1 if a_black else -1)
    assert passes > 0 and re.search(r";[BW]\[\]", "".join(texts))


# --------------------------------------------------------------------------------------
# The writer
# --------------------------------------------------------------------------------------


def test_go_game_sgf_writes_points_passes_and_escapes_text():
    text = sgf.go_game_sgf(9, 7.5, [0, 80, 40, 81, 8, 81, -1, 3], black="A]x\\y", white="b:c",
                           result="B+3.5", date="2026-11-24", comment="one] two\\")
    assert sgf.APPLICATION.startswith("azjax:")
    assert text == (f"(;FF[4]GM[1]CA[UTF-8]AP[{sgf.APPLICATION}]SZ[9]KM[7.5]RU[Chinese]"
                    "PB[A\\]x\\\\y]PW[b:c]DT[2026-11-24]RE[B+3.5]GC[one\\] two\\\\]\n"
                    ";B[aa];W[ii];B[ee];W[];B[ia];W[])\n")
    game = parse(text)
    assert game.get_player_name("b") == "A]x\\y" and game.get_player_name("w") == "b:c"
    assert game.get_root().get("GC") == "one] two\\"
    assert game.get_winner() == "b" and game.get_root().get("RE") == "B+3.5"
    # sgfmill counts rows from the bottom: action 0 (A9, top left) is its (8, 0).
    assert [n.get_move() for n in game.get_main_sequence()[1:]] == [
        ("b", (8, 0)), ("w", (0, 8)), ("b", (4, 4)), ("w", None), ("b", (8, 8)), ("w", None)]
    bare = sgf.go_game_sgf(5, 0, [], black="x", white="y", rules="Tromp-Taylor")
    assert bare == (f"(;FF[4]GM[1]CA[UTF-8]AP[{sgf.APPLICATION}]SZ[5]KM[0]RU[Tromp-Taylor]"
                    "PB[x]PW[y])\n")
    assert parse(bare).get_komi() == 0 and parse(bare).get_main_sequence()[1:] == []
    with pytest.raises(ValueError, match="not an action on a 9x9 board: 82"):
        sgf.go_game_sgf(9, 7.5, [82], black="a", white="b")


def test_sgf_result_and_safe_names():
    assert sgf.sgf_result(3.5) == "B+3.5" and sgf.sgf_result(-0.5) == "W+0.5"
    assert sgf.sgf_result(12.0) == "B+12" and sgf.sgf_result(0.0) == "0"
    assert parse("(;FF[4]SZ[5]RE[W+0.5])").get_winner() == "w"
    assert parse("(;FF[4]SZ[5]RE[0])").get_winner() is None
    assert sgf.safe_name("alphazero:runs/go,sims=8") == "alphazero_runs_go_sims=8"
    assert sgf.safe_name("..") == "_" and sgf.safe_name(".hidden") == "hidden"
    assert pair_dirs(["a:b", "a/b", "c"]) == ["a_b-vs-a_b", "a_b-vs-c", "a_b-vs-c-2"]
    assert sgf.game_file_name(6, 20) == "game-0007.sgf"
    assert sgf.game_file_name(0, 12345) == "game-00001.sgf"
    # The env's Tromp-Taylor count (which the files' results use) agrees with sgfmill's
    # area score (all stones alive).
    rows = ["..X.O", ".XX.O", "XX.OO", "..OO.", "OO..."]  # row 0 the top line
    board = np.array([{".": -1, "X": 0, "O": 1}[ch] for row in rows for ch in row], np.int8)
    points = {ch: [(4 - r, c) for r, row in enumerate(rows) for c, x in enumerate(row) if x == ch]
              for ch in "XO"}
    theirs = boards.Board(5)
    theirs.apply_setup(points["X"], points["O"], [])
    state = envs.make("go", size=5).init(jax.random.key(0)).replace(board=jnp.asarray(board))
    assert np.asarray(envs.make("go", size=5).area_scores(state)).tolist() == [5 + 3, 8 + 4]
    assert theirs.area_score() == 8 - 12


# --------------------------------------------------------------------------------------
# Recorded matches
# --------------------------------------------------------------------------------------


def first_legal(params, states, key):
    del params, key
    return jnp.argmax(states.legal_action_mask, axis=-1).astype(jnp.int32)


def test_recording_keeps_every_ply_and_the_host_loop_records_the_same_games():
    """Tic-tac-toe (cheap to compile): the opening and every ply are recorded (-1 after
    the end), replaying them gives the final states, and the host loop records what the
    device loop does."""
    ttt = envs.make("tictactoe")
    det = Player("first", first_legal)
    host_det = Player("first-host", first_legal, jittable=False)
    key = jax.random.key(2)
    device = play_match(ttt, det, det, key, 10, opening_plies=1, record=True)
    assert device.opening_plies == 1
    assert device.moves.shape[0] == 10 and 5 <= device.moves.shape[1] <= 9
    # Replaying the moves gives the final states, and each game ends where its -1s start.
    states = jax.vmap(ttt.init)(jax.random.split(jax.random.key(0), 10))
    step = match._compiled_rules(ttt)[1]
    for ply in range(device.moves.shape[1]):
        live = ~np.asarray(states.terminated)
        np.testing.assert_array_equal(device.moves[:, ply] >= 0, live)
        states = step(states, jnp.asarray(device.moves[:, ply]))
    np.testing.assert_array_equal(states.board, device.final_states.board)
    assert np.asarray(states.terminated).all()
    assert len({tuple(row) for row in device.moves[:5]}) > 1  # the openings differ
    # Both players deterministic: the host loop plays and records the same games.
    host = play_match(ttt, host_det, det, key, 10, opening_plies=1, record=True)
    np.testing.assert_array_equal(host.moves, device.moves)
    np.testing.assert_array_equal(host.results, device.results)
    np.testing.assert_array_equal(host.final_states.board, device.final_states.board)
    assert host.seat(1).moves.shape == (5, host.moves.shape[1])
    assert host.seat(1).final_states.board.shape == (5, 9)
    assert device.margins is None and "margin" not in device.as_dict()  # won or lost only
    # The compiled match keeps the env's max_plies plies; a game lasting longer is refused.
    assert record_plies(ttt, match.MAX_PLIES) == 9 and record_plies(ttt, 4) == 4
    liar = envs.make("tictactoe")
    liar.max_plies = 3
    with pytest.raises(ValueError, match="cannot record the match: a game of tictactoe lasted "
                                         "more than 3 plies"):
        play_match(liar, det, det, key, 10, opening_plies=1, record=True)
    with pytest.raises(ValueError, match="for Go only, not 'tictactoe'"):
        sgf.match_sgfs(ttt, device)


def test_recorded_device_match_replays_in_sgfmill(go5):
    a, b = random_player("ra"), random_player("rb")
    key = jax.random.key(3)
    plain = play_match(go5, a, b, key, N_GAMES, OPENING)
    recorded = play_match(go5, a, b, key, N_GAMES, OPENING, record=True)
    np.testing.assert_array_equal(plain.results, recorded.results)
    np.testing.assert_array_equal(plain.a_seat, recorded.a_seat)
    moves = recorded.moves
    assert moves.dtype == np.int32 and moves.shape[0] == N_GAMES
    assert OPENING < moves.shape[1] <= OPENING + go5.max_plies
    assert (moves[:, -1] >= 0).any()  # trimmed to the plies the match ran
    # The opening is recorded, and shared by the games of a pair (seats swapped).
    half = N_GAMES // 2
    np.testing.assert_array_equal(moves[:half, :OPENING], moves[half:, :OPENING])
    openings = match._compiled_rules(go5)[0]
    _, _, opening = openings(jax.random.split(key)[0], N_GAMES, OPENING, True)
    np.testing.assert_array_equal(opening, moves[:, :OPENING])
    texts = sgf.match_sgfs(go5, recorded, date="2026-11-24")
    check_match_files(go5, recorded, texts)
    # Games shorter than the move cap ended on two passes: their files end with them.
    lengths = (moves >= 0).sum(axis=1)
    assert (lengths < go5.max_plies).any()
    for text, length in zip(texts, lengths):
        if length < go5.max_plies:
            assert re.search(r";[BW]\[\];[BW]\[\]\)\n$", text)
        assert "DT[2026-11-24]" in text


def host_random_player(name="host-random"):
    """A host player: NumPy's uniform choice over each game's legal moves."""

    def policy(params, states, key):
        del params
        rng = np.random.default_rng(np.asarray(jax.random.key_data(key)).tolist())
        return np.array([rng.choice(np.flatnonzero(mask)) for mask in
                         np.asarray(states.legal_action_mask)], np.int32)

    return Player(name, policy, jittable=False)


def test_host_loop_records_go_games_forfeits_and_unfinished_games(go5):
    player, key = host_random_player(), jax.random.key(5)
    plain = play_match(go5, player, random_player(), key, N_GAMES, OPENING)
    recorded = play_match(go5, player, random_player(), key, N_GAMES, OPENING, record=True)
    np.testing.assert_array_equal(plain.results, recorded.results)
    check_match_files(go5, recorded, sgf.match_sgfs(go5, recorded, event="arena"))

    # An illegal move forfeits: the file stops before it and RE names the other colour.
    forfeit = Player("forfeit", lambda p, s, k: np.zeros(len(s.terminated), np.int32),
                     jittable=False)
    lost = play_match(go5, forfeit, random_player(), key, N_GAMES, OPENING, record=True)
    assert lost.losses == N_GAMES
    finals, _ = env_final_boards(go5, lost.moves)
    for i, text in enumerate(sgf.match_sgfs(go5, lost)):
        game = parse(text)
        colour = "Black" if lost.a_seat[i] == 0 else "White"
        assert game.get_root().get("RE") == ("W+F" if colour == "Black" else "B+F")
        assert f"{colour} played an illegal move (0) and forfeited" in game.get_root().get("GC")
        board, moves, _ = sgfmill_final(game)
        np.testing.assert_array_equal(board, finals[i])
        played = lost.moves[i][lost.moves[i] >= 0]
        assert len(moves) == len(played) - 1 and played[-1] == 0  # the illegal move left out

    # The match's ply cap leaves games running: drawn in the match, RE[Void] in the file.
    void = play_match(go5, player, random_player(), key, N_GAMES, OPENING, max_plies=2,
                      record=True)
    assert void.moves.shape == (N_GAMES, OPENING + 2) and void.draws == N_GAMES
    for text in sgf.match_sgfs(go5, void):
        root = parse(text).get_root()
        assert root.get("RE") == "Void" and "unfinished after 4 moves" in root.get("GC")
        assert len(parse(text).get_main_sequence()) == 5
    with pytest.raises(ValueError, match="record=True"):
        sgf.match_sgfs(go5, plain)


# --------------------------------------------------------------------------------------
# Command lines
# --------------------------------------------------------------------------------------


def test_arena_writes_one_sgf_per_game(go5, tmp_path, capsys):
    out_dir, out_json = tmp_path / "games" / "new", tmp_path / "result.json"
    code = arena_main(["random", "random", "--game", "go", "--game-option", "size=5",
                       "--games", "5", "--openings", "1", "--seed", "4", "--sgf", str(out_dir),
                       "--json", str(out_json)])
    assert code == 0
    out = capsys.readouterr().out
    assert f"wrote 5 SGF files to {out_dir}" in out
    files = sorted(p.name for p in out_dir.iterdir())
    assert files == [f"game-000{i}.sgf" for i in range(1, 6)]
    data = json.loads(out_json.read_text())
    a_wins = 0
    for i, name in enumerate(files):
        game = parse((out_dir / name).read_text())
        a_black = i < 5 // 2
        assert game.get_player_name("b") == game.get_player_name("w") == "random"
        _, _, area = sgfmill_final(game)
        assert game.get_root().get("RE") == sgf.sgf_result(area - 7.5)
        assert re.fullmatch(r"\d{4}-\d\d-\d\d", game.get_root().get("DT"))
        assert "the first 1 moves were random" in game.get_root().get("GC")
        a_wins += (game.get_winner() == "b") == a_black
    assert a_wins == data["wins"]


def test_arena_sgf_errors_come_before_the_games(tmp_path, capsys):
    code = arena_main(["random", "random", "--game", "tictactoe", "--sgf", str(tmp_path / "d")])
    assert code == 2
    captured = capsys.readouterr()
    assert captured.err == ("error: --sgf: SGF game records are written for Go only, "
                            "not 'tictactoe'\n")
    assert captured.out == "" and not (tmp_path / "d").exists()
    (tmp_path / "file").write_text("x")
    code = arena_main(["random", "random", "--game", "go", "--game-option", "size=5",
                       "--sgf", str(tmp_path / "file" / "d")])
    assert code == 2
    captured = capsys.readouterr()
    assert "--sgf:" in captured.err and "is a file, not a directory" in captured.err
    assert captured.out == ""


def test_league_round_robin_writes_each_pair(go5, tmp_path):
    players = [random_player("r]1"), random_player("r/2"), host_random_player("host")]
    matches = round_robin(go5, players, jax.random.key(1), N_GAMES, OPENING, sgf_dir=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "r_1-vs-host", "r_1-vs-r_2", "r_2-vs-host"]
    plain = round_robin(go5, players, jax.random.key(1), N_GAMES, OPENING)
    for m, p in zip(matches, plain):
        np.testing.assert_array_equal(m.results, p.results)
        assert m.moves is None  # written, then dropped
    for m, folder in zip(matches, pair_dirs([p.name for p in players])):
        files = sorted((tmp_path / folder).iterdir())
        assert [f.name for f in files] == [f"game-000{i}.sgf" for i in range(1, N_GAMES + 1)]
        for i, f in enumerate(files):
            game = parse(f.read_text())
            a_black = i < N_GAMES // 2
            assert game.get_player_name("b") == (m.name_a if a_black else m.name_b)
            assert game.get_player_name("w") == (m.name_b if a_black else m.name_a)
            _, moves, area = sgfmill_final(game)
            assert len(moves) > OPENING and game.get_root().get("RE") == sgf.sgf_result(area - 7.5)
            assert m.results[i] == (1 if (area > 7.5) == a_black else -1)
    with pytest.raises(ValueError, match="sgf_dir: SGF game records are written for Go only"):
        round_robin(envs.make("tictactoe"), players[:2], jax.random.key(1), 2, sgf_dir=tmp_path)


def test_league_refuses_sgf_for_other_games_before_playing(tmp_path, capsys):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    TrainConfig().replace(game="tictactoe").save(run_dir / "config.json")
    messages = []
    with pytest.raises(ValueError, match="--sgf: SGF game records are written for Go only"):
        run_league(RunDir.open(run_dir), sgf_dir=tmp_path / "sgf", progress=messages.append)
    assert messages == [] and not (tmp_path / "sgf").exists()
    assert league_main(["--run-dir", str(run_dir), "--sgf", str(tmp_path / "sgf")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --sgf: SGF game records are written for Go only")
