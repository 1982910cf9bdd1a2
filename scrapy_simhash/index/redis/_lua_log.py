"""The log scripts of :mod:`scrapy_simhash.index.redis` other than the check
(:mod:`._lua_check`): append a batch, sync a worker's copy, remove records, read keys.

Each runs after the prelude of :mod:`._lua` (the layout, ``diverged``, ``behind``,
``append``, ``tombstone``, ...), which also documents the keys and the arguments every
script takes; ``ENSURE_META`` runs alone.
"""

from __future__ import annotations

# ARGV[5] the fingerprints, 8 bytes each; [6] their sketches, concatenated (32 bytes,
# zeros for none, and a short page's shingles); [7] their key CRCs, 4 bytes each; [8] the
# sketches' sizes, 2 bytes each (big-endian); [9...] their keys. Reply: {'added', first seq}.
ADD_BODY = """
local first, at = N, 1
for n = 0, #ARGV - 9 do
  local size = struct.unpack('>I2', string.sub(ARGV[8], n * 2 + 1, n * 2 + 2))
  local sketch = string.sub(ARGV[6], at, at + size - 1)
  at = at + size
  append(string.sub(ARGV[5], n * 8 + 1, n * 8 + 8), ARGV[n + 9], sketch, string.sub(ARGV[7], n * 4 + 1, n * 4 + 4))
end
redis.call('SET', COUNTER, N)
-- A batch leaves ~0.2 KB of Lua garbage a record (200 KB for 1,000, more than the
-- scripts hold live), which Lua's collector would sweep during the next scripts, other
-- workers' checks: collected here (~50 us), not for a few records (a check leaves ~10 KB).
if N - first >= 64 then collectgarbage('collect') end
return {'added', first}
"""

# ARGV[5] the mirror's position; [6] its tombstones; [7] its last fingerprint and
# tombstone (see diverged). Reply: {'synced', records, the first record left, new
# tombstones}: with a TTL, expired chunks are skipped (chunks expire in order: a binary
# search finds the first one left). The client reads the records from there in the same transaction
# (LogSession.sync): a script's reply would cost Redis ~40x more a KB than plain reads.
SYNC_BODY = """
local P, T = tonumber(ARGV[5]), tonumber(ARGV[6])
if diverged(P, T, ARGV[7]) then return {'reload'} end
local start = P
if TTL > 0 and P < N and redis.call('EXISTS', name('f', floor(P / CHUNK))) == 0 then
  local low, high = floor(P / CHUNK) + 1, floor((N - 1) / CHUNK) + 1
  while low < high do
    local mid = floor((low + high) / 2)
    if redis.call('EXISTS', name('f', mid)) == 1 then high = mid else low = mid + 1 end
  end
  start = math.min(N, low * CHUNK)
end
return {'synced', N, start, NEW_TOMBSTONES}
"""

# ARGV[5] the 8-byte fingerprint; [6] '1' to remove only the records whose key is
# ARGV[7], '0' for all; [8..10] the mirror's position, tombstones and last fingerprint
# and tombstone (see diverged); [11] the longest tail scanned here; [12...] the mirrored
# records with this fingerprint. Reply: {'removed', tombstones, seq, ...} or {'behind',
# records} (see behind); tombstones: those the mirror has not seen, the new ones included
# (see removed).
REMOVE_BODY = """
local FP, ONE, KEY, P, BOUND = ARGV[5], ARGV[6] == '1', ARGV[7], tonumber(ARGV[8]), tonumber(ARGV[11])
if diverged(P, tonumber(ARGV[9]), ARGV[10]) then return {'reload'} end
if N - P > BOUND then return behind() end
local seqs = {}
for n = 12, #ARGV do seqs[#seqs + 1] = tonumber(ARGV[n]) end
find_records(fingerprints(P, N), FP, 8, P, seqs)
return removed(tombstone(seqs, ONE and KEY or nil), tonumber(ARGV[9]))
"""

# ARGV[5] the key; [6] its CRC (4 bytes); [7..9] the mirror's position, tombstones and
# last fingerprint and tombstone (see diverged); [10] the longest tail scanned here;
# [11...] the mirror's records with that CRC. Reply: as REMOVE's.
REMOVE_KEY_BODY = """
local KEY, CRC, P, BOUND = ARGV[5], ARGV[6], tonumber(ARGV[7]), tonumber(ARGV[10])
if diverged(P, tonumber(ARGV[8]), ARGV[9]) then return {'reload'} end
if N - P > BOUND then return behind() end
local seqs = {}
for n = 11, #ARGV do seqs[#seqs + 1] = tonumber(ARGV[n]) end
return removed(remove_key_records(KEY, CRC, seqs, key_crcs(P, N), P), tonumber(ARGV[8]))
"""

# ARGV[5...] sequence numbers. Reply: {'keys', key or nil, ...} (nil: gone).
KEYS_BODY = """
local reply = {'keys'}
for n = 5, #ARGV do
  local seq = tonumber(ARGV[n])
  reply[n - 3] = live(seq) and key_of(seq)
end
return reply
"""

# KEYS[1] meta; ARGV: field, value, ... Creates it unless it exists; replies with the meta in force.
ENSURE_META = """
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('HSET', KEYS[1], unpack(ARGV)) end
return redis.call('HGETALL', KEYS[1])
"""
