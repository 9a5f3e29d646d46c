"""Music: library search, playback, volume and playlists."""

from __future__ import annotations

from random import Random

from tinytool.data.demo.catalog.base import (
    ToolError,
    ToolSpec,
    need_id,
    p_array,
    p_bool,
    p_enum,
    p_int,
    p_str,
    phrases,
    say_quoted,
)
from tinytool.data.demo.catalog.world import World

PLAYLIST_NAMES = ("Road Trip", "Sunday Chill", "Workout Mix", "Rainy Day", "Party Starters", "Deep Focus")


def _need_track(w: World, track_id: str) -> dict:
    return need_id(w.track_index, track_id, "track")


def _check_tracks(w: World, track_ids: list) -> None:
    if not track_ids:
        raise ToolError("'track_ids' must list at least one track")
    for t in track_ids:
        _need_track(w, t)


def search_music(w: World, query: str, type: str = "track", limit: int = 5) -> dict:
    q = query.lower()
    if type == "artist":
        names = sorted({t["artist"] for t in w.tracks if q in t["artist"].lower()})
        return {"type": "artist", "results": [{"artist": n} for n in names[:limit]]}
    if type == "album":
        albums = sorted({(t["album"], t["artist"]) for t in w.tracks if q in t["album"].lower() or q in t["artist"].lower()})
        return {"type": "album", "results": [{"album": a, "artist": b} for a, b in albums[:limit]]}
    hits = [t for t in w.tracks if q in t["title"].lower() or q in t["artist"].lower() or q == t["genre"]]
    return {"type": "track", "results": [{k: t[k] for k in ("track_id", "title", "artist", "duration_s")} for t in hits[:limit]]}


def play_track(w: World, track_id: str, start_seconds: int = 0) -> dict:
    t = _need_track(w, track_id)
    if not 0 <= start_seconds < t["duration_s"]:
        raise ToolError(f"'start_seconds' must be within the track (0-{t['duration_s'] - 1})")
    w.state["devices"]["player"]["now_playing"] = track_id
    return {"status": "playing", "track_id": track_id, "title": t["title"], "artist": t["artist"], "position_s": start_seconds}


def get_now_playing(w: World) -> dict:
    tid = w.state["devices"]["player"]["now_playing"]
    if tid is None:
        return {"status": "stopped", "track": None}
    t = w.track_index[tid]
    return {"status": "playing", "track": {k: t[k] for k in ("track_id", "title", "artist")}}


def set_volume(w: World, level: int) -> dict:
    if not 0 <= level <= 100:
        raise ToolError("'level' must be between 0 and 100")
    w.state["devices"]["player"]["volume"] = level
    return {"status": "ok", "volume": level}


def create_playlist(w: World, name: str, track_ids: list, public: bool = False) -> dict:
    _check_tracks(w, track_ids)
    pid = w.next_id("PL-", 4, (name, track_ids))
    w.state["playlists"][pid] = {"name": name, "track_ids": list(track_ids), "public": public}
    return {"status": "created", "playlist_id": pid, "name": name, "tracks": len(track_ids), "public": public}


def add_to_playlist(w: World, playlist_id: str, track_ids: list) -> dict:
    pl = w.state["playlists"].get(playlist_id)
    if pl is None:
        raise ToolError(f"no playlist with id '{playlist_id}'")
    _check_tracks(w, track_ids)
    added = [t for t in track_ids if t not in pl["track_ids"]]
    pl["track_ids"].extend(added)
    return {"status": "updated", "playlist_id": playlist_id, "added": len(added), "tracks": len(pl["track_ids"])}


def _track_ids(r: Random, w: World) -> list:
    return [t["track_id"] for t in r.sample(w.tracks, r.randint(2, 4))]


def _query(r: Random, w: World) -> str:
    t = r.choice(w.tracks)
    return r.choice((t["artist"], t["title"], t["genre"]))


TRACK_ID = p_str("track_id", "Track id from search_music, e.g. 'TRK-4821'.", lambda r, w: r.choice(w.tracks)["track_id"],
                 label="track id")
TRACK_IDS = p_array("track_ids", "Track ids to include.", {"type": "string"}, _track_ids, label="list of track ids")

TOOLS = [
    ToolSpec(
        "search_music", "music", "Search the music library for tracks, albums or artists.",
        (p_str("query", "Title, artist or genre to search for.", _query, label="search term"),
         p_enum("type", "What kind of result.", ("track", "album", "artist"), default="track",
                say=phrases({"track": ("songs", "tracks"), "album": "albums", "artist": "artists"})),
         p_int("limit", "Maximum number of results.", lambda r, w: r.randint(2, 10), default=5)),
        search_music,
        templates=("Search the music library for {query}[, {type} only][, top {limit}].",
                   "Find music matching {query}[, {type} only].", "Look up {query} in my music[ — show {limit} results].",
                   "Any music by or called {query}?"),
        gist="search the music library", siblings=("play_track", "search_products"),
    ),
    ToolSpec(
        "play_track", "music", "Start playing a track.",
        (TRACK_ID, p_int("start_seconds", "Position to start from, in seconds.", lambda r, w: r.choice((15, 30, 45, 60, 90)),
                         default=0)),
        play_track,
        templates=("Play {track_id}[ starting at {start_seconds} seconds].", "Start playing track {track_id}[ from second {start_seconds}].",
                   "Put on {track_id}.", "Play that song[ ({track_id})] for me."),
        gist="play a song", siblings=("search_music", "get_now_playing", "set_volume"),
    ),
    ToolSpec(
        "get_now_playing", "music", "Tell which track is playing right now.", (), get_now_playing,
        templates=("What's playing right now?", "Which song is this?", "What track is on at the moment?",
                   "Tell me what's currently playing."),
        gist="tell which song is playing", siblings=("play_track", "search_music"),
    ),
    ToolSpec(
        "set_volume", "music", "Set the music player's volume (0-100).",
        (p_int("level", "Volume level, 0-100.", lambda r, w: r.choice((10, 20, 25, 30, 40, 50, 60, 75, 80)), label="volume level",
               say=lambda v, r: r.choice((str(v), f"{v}%", f"{v} percent"))),),
        set_volume,
        templates=("Set the volume to {level}.", "Set the music volume[ to {level}].", "Volume {level} please.",
                   "Change the speaker volume to {level}."),
        gist="change the music volume", siblings=("play_track", "set_thermostat"),
    ),
    ToolSpec(
        "create_playlist", "music", "Create a new playlist from tracks.",
        (p_str("name", "Playlist name.", lambda r, w: r.choice(PLAYLIST_NAMES), say=lambda v, r: say_quoted(v, r) if r.random() < 0.5 else v,
               label="playlist name"),
         TRACK_IDS, p_bool("public", "Make the playlist public.", {True: (" and make it public", ", public"),
                                                                  False: (", keep it private", " as a private playlist")})),
        create_playlist,
        templates=("Create a playlist called {name} with {track_ids}[{public}].",
                   "Make a playlist named {name} containing {track_ids}[{public}].",
                   "Start a new playlist, {name}, with tracks {track_ids}.",
                   "Create a new playlist[ called {name}] from {track_ids}[{public}]."),
        gist="create a playlist", siblings=("add_to_playlist", "add_to_shopping_list"),
    ),
    ToolSpec(
        "add_to_playlist", "music", "Add tracks to an existing playlist.",
        (p_str("playlist_id", "Playlist id, e.g. 'PL-02'.", lambda r, w: r.choice(sorted(w.state["playlists"])),
               label="playlist id"), TRACK_IDS),
        add_to_playlist,
        templates=("Add {track_ids} to playlist {playlist_id}.", "Put {track_ids} on my playlist {playlist_id}.",
                   "Append {track_ids} to the playlist[ {playlist_id}]."),
        gist="add songs to a playlist", siblings=("create_playlist", "add_to_cart"), held_out=True,
    ),
]
