"""The Lua scripts of :mod:`scrapy_simhash.index.redis` (Redis >= 6: ``SET ... KEEPTTL``).

A namespace is an append-only log; every key starts with its prefix ``P``:

* record ``s`` (its sequence number) lives in chunk ``c = s // C`` (``C`` records a
  chunk, from the meta hash) at slot ``i = s % C``, spread over parallel strings:
  ``P:f<c>`` its fingerprint (8 bytes big-endian, slot ``i`` at byte ``8i``),
  ``P:k<c>`` the keys (coded by :mod:`._keys`, concatenated), ``P:o<c>`` where each key ends in
  ``P:k<c>`` (4 bytes big-endian), ``P:s<c>`` the first 32 bytes of its sketch
  (:mod:`scrapy_simhash.core.sketch`, at byte ``32i``; all zeros, or past the end of
  the string: stored without one), ``P:x<c>`` a hash whose field ``i`` holds the rest
  of a short page's sketch (its shingles, 2 bytes each; from format "6" on, deleted
  and expiring with the chunk), ``P:h<c>`` the CRC-32 of its key (4 bytes,
  :func:`~._key_lookup.key_crc`: how a page's older records are found), and with a TTL
  ``P:e<c>`` its expiry (4 bytes, Unix seconds by the Redis clock; each chunk key
  expires with its last record);
* ``P:n`` the number of records ever appended; ``P:x`` the removed records, as 8-byte
  sequence numbers (tombstones); ``P:meta`` format, options, chunk size and an
  *epoch*, a token made when the namespace is created.

Clients search a mirror of the log (:mod:`._mirror`, fingerprints and key CRCs); the
check script (:mod:`._lua_check`), given its matches and position, atomically
confirms them (live, and the pages alike, as
:class:`~scrapy_simhash.core.sketch.Confirmation` tells), scans the records it has not
seen and appends the new one when nothing was confirmed; the others (:mod:`._lua_log`)
append batches, sync a mirror, remove records and read keys. This module holds their
prelude, the layout's functions. Fingerprints stay 8 raw bytes (Lua numbers are doubles,
64-bit values would lose bits), compared byte by byte (a popcount table).

Every script takes KEYS = meta, counter, tombstones; ARGV[1..4] = epoch, key prefix,
records a chunk, TTL seconds (0: none); it answers ``{'reload'}`` when the epoch is
not the namespace's (reset, flushed and recreated) and fails with ``SIMHASH_NOMETA``
when the namespace is gone.
"""

from __future__ import annotations

from ...core.sketch import SKETCH_BYTES
from ._lua_check import CHECK_BODY, CHECK_EARLY
from ._lua_log import ADD_BODY, KEYS_BODY, REMOVE_BODY, REMOVE_KEY_BODY, SYNC_BODY

_HEAD = """
local META, COUNTER, TOMBS = KEYS[1], KEYS[2], KEYS[3]
local EPOCH, PREFIX, CHUNK, TTL = ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local meta = redis.call('HMGET', META, 'epoch', 'format')
local epoch = meta[1]
if not epoch then return redis.error_reply('SIMHASH_NOMETA') end
if epoch ~= EPOCH then return {'reload'} end
local N = tonumber(redis.call('GET', COUNTER) or '0')
"""

# After a script's early answers (the check's "behind"): what runs before them costs every call.
_PRELUDE = """
-- Format "5" (before short pages' shingles): none stored, so that its workers, which
-- neither read nor delete them, may share it; its short pages are confirmed by sketch.
local SHINGLES = meta[2] ~= '5'
if redis.replicate_commands then redis.replicate_commands() end  -- Redis < 7: TIME, then writes
local NOW = 0
if TTL > 0 then NOW = tonumber(redis.call('TIME')[1]) end
local floor, byte, concat = math.floor, string.byte, table.concat
local SKETCH_SIZE = SKETCH_BYTES
local NO_SKETCH = string.rep('\\0', SKETCH_SIZE)  -- how a record without a sketch holds it
local KINDS = {'f', 'k', 'o', 's', 'h'}  -- the chunk's strings; 'x' is a hash
if TTL > 0 then KINDS[6] = 'e' end

local function name(kind, chunk) return PREFIX .. kind .. chunk end

local function seq8(seq)  -- a tombstone: the 8-byte big-endian sequence number
  return struct.pack('>I4I4', floor(seq / 4294967296), seq % 4294967296)
end

local tombstones
local function removed(seq)  -- string.find (C) over the log, aligned hits only
  if tombstones == nil then tombstones = redis.call('GET', TOMBS) or '' end
  local pattern = seq8(seq)
  local at = string.find(tombstones, pattern, 1, true)
  while at do
    if (at - 1) % 8 == 0 then return true end
    at = string.find(tombstones, pattern, at + 1, true)
  end
  return false
end

local function live(seq)  -- not expired (TTL), not removed
  if TTL > 0 then
    local chunk = floor(seq / CHUNK)
    local at = (seq - chunk * CHUNK) * 4
    local e = redis.call('GETRANGE', name('e', chunk), at, at + 3)
    if #e < 4 or struct.unpack('>I4', e) <= NOW then return false end
  end
  return not removed(seq)
end

-- where the key of the record at slot ends in its chunk's keys (0 before slot 0; -1 when
-- its end is gone with the chunk's string of key ends)
local function key_end(chunk, slot)
  if slot < 0 then return 0 end
  local ends = redis.call('GETRANGE', name('o', chunk), slot * 4, slot * 4 + 3)
  return #ends == 4 and struct.unpack('>I4', ends) or -1
end

-- the key of record seq; false when it is gone (its chunk expired or was evicted)
local GONE = 4294967295  -- the key end of a record whose chunk was blanked (see blank)
local function key_of(seq)
  local chunk = floor(seq / CHUNK)
  local slot = seq - chunk * CHUNK
  local from = math.max(slot - 1, 0) * 4
  local ends = redis.call('GETRANGE', name('o', chunk), from, slot * 4 + 3)
  local start, stop = 0, 0
  if slot == 0 and #ends == 4 then stop = struct.unpack('>I4', ends)
  elseif slot > 0 and #ends == 8 then start, stop = struct.unpack('>I4I4', ends)
  else return false end
  if stop == GONE then return false elseif start == GONE then start = 0 end
  if stop < start then return false end  -- (keys started again under old ends, by an older release)
  if stop == start then return '' end
  local key = redis.call('GETRANGE', name('k', chunk), start, stop - 1)
  if #key < stop - start then return false end  -- the keys' string alone evicted (or cut): gone
  return key
end

-- the values of records first .. last - 1 in the chunk strings of kind, width bytes
-- each ('f': fingerprints, 'h': key CRCs), zeros where a chunk is gone
local function column(kind, width, first, last)
  local parts = {}
  while first < last do
    local chunk = floor(first / CHUNK)
    local stop = math.min(last, (chunk + 1) * CHUNK)
    local at, size = (first - chunk * CHUNK) * width, (stop - first) * width
    local s = redis.call('GETRANGE', name(kind, chunk), at, at + size - 1)
    if #s < size then s = s .. string.rep('\\0', size - #s) end
    parts[#parts + 1] = s
    first = stop
  end
  if #parts == 1 then return parts[1] end  -- (concat copies: ~1.4 us a KB)
  return concat(parts)
end
local function fingerprints(first, last) return column('f', 8, first, last) end
local function key_crcs(first, last) return column('h', 4, first, last) end

local function tombstones_since(count) return redis.call('GETRANGE', TOMBS, count * 8, -1) end

-- The reply to a worker whose copy is more than a script should scan behind the log:
-- where the log ends, so that it catches up by plain reads of the chunks
-- (LogSession.catch_up), then calls again.
local function behind() return {'behind', N} end

-- Whether a worker's copy of the log is not this log any more: Redis lost writes it had
-- seen (a restart from an older snapshot, a promoted replica, a restored backup). Its
-- state: position (records it holds), tombstones seen, and *last*: the fingerprint of
-- its last record (8 bytes; none: no record, or not to check), then, when it has seen
-- tombstones, the last of them (8 bytes: a lost removal replaced by another one leaves
-- as many tombstones, not the same). Then it must mirror the log afresh.
-- Else NEW_TOMBSTONES holds the tombstones it has not seen (read from its last one on:
-- one call tells both).
local NEW_TOMBSTONES = ''
local function diverged(position, tombstones_seen, last)
  if position > N then return true end
  local tombs = redis.call('GETRANGE', TOMBS, math.max(tombstones_seen - 1, 0) * 8, -1)
  local last8 = last
  if tombstones_seen > 0 then
    if #tombs < 8 then return true end
    if #last >= 8 then
      if string.sub(tombs, 1, 8) ~= string.sub(last, -8) then return true end
      last8 = string.sub(last, 1, -9)
    end
    tombs = string.sub(tombs, 9)
  end
  NEW_TOMBSTONES = tombs
  if #last8 ~= 8 or position == 0 then return false end
  local chunk = floor((position - 1) / CHUNK)
  local at = (position - 1 - chunk * CHUNK) * 8
  local stored = redis.call('GETRANGE', name('f', chunk), at, at + 7)
  return #stored == 8 and stored ~= last8  -- (a chunk gone with its TTL proves nothing)
end

-- A chunk that lost strings (expired while idle, evicted under maxmemory) would put
-- the record out of place: blank the chunk's earlier records (keys gone, expired) instead.
local function blank(chunk, slot, fp8, key, crc4, expiry)
  redis.call('SET', name('f', chunk), string.rep('\\0', slot * 8) .. fp8)
  redis.call('SET', name('h', chunk), string.rep('\\0', slot * 4) .. crc4)
  redis.call('SET', name('k', chunk), key)
  redis.call('SET', name('o', chunk), string.rep('\\255', slot * 4) .. struct.pack('>I4', #key))
  redis.call('DEL', name('s', chunk), name('x', chunk))  -- no sketch (nor shingles) of another log
  if TTL > 0 then redis.call('SET', name('e', chunk), string.rep('\\0', slot * 4) .. expiry) end
end

-- record N; sketch: 32 bytes (NO_SKETCH for none), then a short page's shingles
local function append(fp8, key, sketch, crc4)
  local chunk = floor(N / CHUNK)
  local slot, expiry = N - chunk * CHUNK, struct.pack('>I4', NOW + TTL)
  local whole = redis.call('APPEND', name('f', chunk), fp8) == slot * 8 + 8
  local stop = redis.call('APPEND', name('k', chunk), key)
  -- the keys' string alone lost (evicted) would start again at 0, under the old key ends
  whole = stop == key_end(chunk, slot - 1) + #key and whole
  whole = redis.call('APPEND', name('o', chunk), struct.pack('>I4', stop)) == slot * 4 + 4 and whole
  whole = redis.call('APPEND', name('h', chunk), crc4) == slot * 4 + 4 and whole
  if TTL > 0 then whole = redis.call('APPEND', name('e', chunk), expiry) == slot * 4 + 4 and whole end
  if not whole then blank(chunk, slot, fp8, key, crc4, expiry) end
  -- Sketches are written at their slot, not appended: records without one store
  -- nothing (zeros once a later one has one), and a lost string loses only sketches.
  local head = string.sub(sketch, 1, SKETCH_SIZE)
  if head ~= NO_SKETCH then redis.call('SETRANGE', name('s', chunk), slot * SKETCH_SIZE, head) end
  local shingles = SHINGLES and head ~= NO_SKETCH and #sketch > SKETCH_SIZE
  if shingles then redis.call('HSET', name('x', chunk), slot, string.sub(sketch, SKETCH_SIZE + 1)) end
  for n = 1, TTL > 0 and #KINDS or 0 do redis.call('EXPIREAT', name(KINDS[n], chunk), NOW + TTL + 1) end
  if shingles and TTL > 0 then redis.call('EXPIREAT', name('x', chunk), NOW + TTL + 1) end
  N = N + 1
  if N % CHUNK == 0 then  -- a full chunk: copied once, as APPEND leaves up to 2x allocated
    for _, kind in ipairs(KINDS) do
      local s = redis.call('GET', name(kind, chunk))
      if s then redis.call('SET', name(kind, chunk), s, 'KEEPTTL') end
    end
  end
end

-- Add to list the records first + i whose value (width bytes) in column is needle:
-- string.find (C) over the column, aligned hits only.
local function find_records(column, needle, width, first, list)
  local at = string.find(column, needle, 1, true)
  while at do
    if (at - 1) % width == 0 then list[#list + 1] = first + (at - 1) / width end
    at = string.find(column, needle, at + 1, true)
  end
  return list
end

-- Tombstone the live records of seqs: those under key, or under any key when key is
-- nil. Returns the removed seqs.
local function tombstone(seqs, key)
  local removed = {}
  for _, seq in ipairs(seqs) do
    local stored = live(seq) and key_of(seq)
    if stored and (key == nil or stored == key) then
      redis.call('APPEND', TOMBS, seq8(seq))
      removed[#removed + 1] = seq
    end
  end
  return removed
end

-- Remove the live records under key: of seqs (the mirror's records with its CRC, a
-- table of the caller's, extended here) and of the records first .. N - 1 (those the
-- mirror has not seen, whose key CRCs are tail_crcs) with CRC crc4. Returns the removed seqs.
local function remove_key_records(key, crc4, seqs, tail_crcs, first)
  return tombstone(find_records(tail_crcs, crc4, 4, first, seqs), key)
end

-- The reply of a removal: {'removed', the tombstones after the mirror's first
-- tombstones_seen (its own new ones included: it counts them as it counts any, so a
-- removal Redis loses later is noticed by diverged), seq, ...}.
local function removed(seqs, tombstones_seen)
  local tombs = #seqs > 0 and tombstones_since(tombstones_seen) or NEW_TOMBSTONES
  local reply = {'removed', tombs}
  for _, seq in ipairs(seqs) do reply[#reply + 1] = seq end
  return reply
end"""

_PRELUDE = _PRELUDE.replace("SKETCH_BYTES", str(SKETCH_BYTES))
CHECK = _HEAD + CHECK_EARLY + _PRELUDE + CHECK_BODY
ADD = _HEAD + _PRELUDE + ADD_BODY
SYNC = _HEAD + _PRELUDE + SYNC_BODY
REMOVE = _HEAD + _PRELUDE + REMOVE_BODY
REMOVE_KEY = _HEAD + _PRELUDE + REMOVE_KEY_BODY
KEYS_OF = _HEAD + _PRELUDE + KEYS_BODY
