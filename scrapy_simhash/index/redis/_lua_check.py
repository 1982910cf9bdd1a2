"""The check script of :mod:`scrapy_simhash.index.redis`: confirm, scan the tail, append.

It runs after the prelude of :mod:`._lua` (the layout, ``live``, ``key_of``,
``append``, ...), atomically: of the mirror's candidates and the records the mirror has
not seen that are within k of the query, a record is a match when it is live and its
sketch confirms it as :class:`~scrapy_simhash.core.sketch.Confirmation` does (or either
has none). For ``add_if_new`` (mode ``'check'``) the new record is appended when no
match was confirmed, so of two workers racing with near-duplicates, exactly one keeps
its page. The mirror's candidates
are checked against the stored fingerprints, and a mirror that is not of this log any
more (Redis lost writes it had seen: ``diverged`` in :mod:`._lua`) is told to
mirror it afresh, so no match is reported that Redis does not hold. For ``replace_if_new``
(mode ``'replace'``), unless a match is under the page's own key, the key's earlier
records are removed first, in the same step.

A sketch's first 32 bytes are compared as eight 32-bit words (the ``bit`` module works
on 32 bits; Lua numbers are doubles, no 64-bit integers): an XOR, and a popcount by bit
arithmetic (SWAR), cheaper for the few candidates of a check than building the byte
popcount table the scan of the tail uses for fingerprints. Two short pages (both with
shingles) are compared exactly instead: a merge of their sorted 16-bit shingles counts
the common ones, and ``common * 1000 >= min_permille * union`` decides, on integers
(exact in doubles) as in Python.
"""

from __future__ import annotations

# ARGV[5] 'check' (add_if_new), 'replace' (replace_if_new) or 'query'; [6] the 8-byte
# fingerprint; [7] the 8 bytes of NOT wildcard (the bits that count); [8] max distance;
# [9] the key; [10] the query's sketch (32 bytes, zeros: none; then a short page's
# shingles); [11] the most bits two sketches may differ in; [12] the least common shingles
# of two short pages, in thousandths of their union; [13] the mirror's position (records
# it holds); [14] tombstones it holds; [15] its last record's fingerprint and tombstone
# (see diverged); [16] the longest tail scanned here (longer: 'behind', the client catches
# up first); [17] the key's CRC (4 bytes); [18] how many of the mirror's records have it,
# m; [19 .. 18 + m] those records; [19 + m ...] the mirror's candidates. Reply: {'behind',
# records} (CHECK_EARLY), {'reload'}, or {'stored' | 'found', records, tail fingerprints,
# tail key CRCs, new tombstones, records of the key replaced, seq, key, a, b, seq, ...}
# (the confirmed matches; a, b: b shingles in all, a in common, when compared exactly,
# else b = 0 and a the sketch distance, -1: not compared).
_CHECK = """
local MODE, FP, MASK, K, KEY = ARGV[5], ARGV[6], ARGV[7], tonumber(ARGV[8]), ARGV[9]
local SKETCH, MAX_SKETCH = string.sub(ARGV[10], 1, SKETCH_SIZE), tonumber(ARGV[11])
local MIN_PERMILLE = tonumber(ARGV[12])
local P, T = tonumber(ARGV[13]), tonumber(ARGV[14])
local CRC, KEY_RECORDS = ARGV[17], tonumber(ARGV[18])
if diverged(P, T, ARGV[15]) then return {'reload'} end
local band, bxor, rshift = bit.band, bit.bxor, bit.rshift

local function popcount32(x)  -- bits set in a 32-bit word: no table to build (~2 us a sketch)
  x = x - band(rshift(x, 1), 0x55555555)
  x = band(x, 0x33333333) + band(rshift(x, 2), 0x33333333)
  x = band(x + rshift(x, 4), 0x0F0F0F0F)
  x = x + rshift(x, 8)
  return band(x + rshift(x, 16), 0x3F)
end

local WORDS = SKETCH_SIZE / 4
local AS_WORDS = '>' .. string.rep('I4', WORDS)
local HAS_SKETCH, QUERY = SKETCH ~= NO_SKETCH, nil  -- QUERY: its words, read on first use
-- bits in which a stored sketch's 32 bytes differ from the query's
local function sketch_distance(stored)
  QUERY = QUERY or {struct.unpack(AS_WORDS, SKETCH)}
  local words, d = {struct.unpack(AS_WORDS, stored)}, 0
  for i = 1, WORDS do d = d + popcount32(bxor(words[i], QUERY[i])) end
  return d
end

-- a short page's shingles (2 bytes each, little-endian, sorted) as numbers: one
-- struct.unpack (C) for them all, not a string.byte a shingle
local function shingle_list(data)
  local count = floor(#data / 2)
  local list = {struct.unpack('<' .. string.rep('H', count), data)}
  list[count + 1] = nil  -- (the position after the last, which unpack returns too)
  return list
end
local QUERY_SHINGLES = nil  -- the query's (a short page's), decoded on first use
if SHINGLES and HAS_SKETCH and #ARGV[10] > SKETCH_SIZE then
  QUERY_SHINGLES = string.sub(ARGV[10], SKETCH_SIZE + 1)
end

-- how many values two sorted lists of distinct values share (a merge)
local function common_count(a, b)
  local i, j, common, na, nb = 1, 1, 0, #a, #b
  while i <= na and j <= nb do
    if a[i] == b[j] then common, i, j = common + 1, i + 1, j + 1
    elseif a[i] < b[j] then i = i + 1 else j = j + 1 end
  end
  return common
end

-- Record seq against the query: whether it confirms the match, and a, b (see the reply).
-- Either sketch absent (or the chunk's sketches gone): the fingerprint alone decides.
local function compare(seq)
  if not HAS_SKETCH then return true, -1, 0 end
  local chunk = floor(seq / CHUNK)
  local slot = seq - chunk * CHUNK
  local at = slot * SKETCH_SIZE
  local stored = redis.call('GETRANGE', name('s', chunk), at, at + SKETCH_SIZE - 1)
  if #stored < SKETCH_SIZE or stored == NO_SKETCH then return true, -1, 0 end
  local theirs = QUERY_SHINGLES and redis.call('HGET', name('x', chunk), slot)
  if theirs then  -- two short pages: their exact Jaccard similarity
    if type(QUERY_SHINGLES) == 'string' then QUERY_SHINGLES = shingle_list(QUERY_SHINGLES) end
    local other = shingle_list(theirs)
    local common = common_count(QUERY_SHINGLES, other)
    local union = #QUERY_SHINGLES + #other - common
    return common * 1000 >= MIN_PERMILLE * union, common, union
  end
  local d = sketch_distance(stored)
  return d <= MAX_SKETCH, d, 0
end

local found = {}
local function confirm(seq)  -- a record within k: a match if live, alike, key there
  if not live(seq) then return end
  local confirmed, a, b = compare(seq)
  if not confirmed then return end
  local key = key_of(seq)
  if key then found[#found + 1] = seq; found[#found + 1] = key; found[#found + 1] = a; found[#found + 1] = b end
end

local QF1, QF2 = struct.unpack('>I4I4', FP)
local QM1, QM2 = struct.unpack('>I4I4', MASK)
-- whether record seq's stored fingerprint is within K of the query off the wildcard bits:
-- the mirror's candidates are checked against what Redis holds, not taken on trust
local function within_k(seq)
  local chunk = floor(seq / CHUNK)
  local at = (seq - chunk * CHUNK) * 8
  local stored = redis.call('GETRANGE', name('f', chunk), at, at + 7)
  if #stored < 8 then return false end
  local s1, s2 = struct.unpack('>I4I4', stored)
  return popcount32(band(bxor(s1, QF1), QM1)) + popcount32(band(bxor(s2, QF2), QM2)) <= K
end

for n = 19 + KEY_RECORDS, #ARGV do
  local seq = tonumber(ARGV[n])
  if within_k(seq) then confirm(seq) end
end
local tail = fingerprints(P, N)
if #tail > 0 then  -- the records the mirror has not seen
  local pop = {[0] = POPCOUNTS}  -- bits set in each byte value
  local q1, q2, q3, q4, q5, q6, q7, q8 = byte(FP, 1, 8)
  local m1, m2, m3, m4, m5, m6, m7, m8 = byte(MASK, 1, 8)
  for pos = 1, #tail, 8 do
    local a1, a2, a3, a4, a5, a6, a7, a8 = byte(tail, pos, pos + 7)
    local d = pop[band(bxor(a1, q1), m1)] + pop[band(bxor(a2, q2), m2)]
      + pop[band(bxor(a3, q3), m3)] + pop[band(bxor(a4, q4), m4)]
      + pop[band(bxor(a5, q5), m5)] + pop[band(bxor(a6, q6), m6)]
      + pop[band(bxor(a7, q7), m7)] + pop[band(bxor(a8, q8), m8)]
    if d <= K then confirm(P + (pos - 1) / 8) end
  end
end
local tail_crcs = key_crcs(P, N)  -- (read before the append below)
local store, replaced = MODE == 'check' and #found == 0, 0
if MODE == 'replace' then  -- unless its own record matches (unchanged), the key's earlier records go
  local own = false
  for n = 2, #found, 4 do own = own or found[n] == KEY end
  if not own then
    local seqs = {}
    for n = 19, 18 + KEY_RECORDS do seqs[#seqs + 1] = tonumber(ARGV[n]) end
    replaced = #remove_key_records(KEY, CRC, seqs, tail_crcs, P)
    store = #found == 0
  end
end
local tombs = replaced > 0 and tombstones_since(T) or NEW_TOMBSTONES  -- (with those it added)
local reply = {'found', N, tail, tail_crcs, tombs, replaced}
if store then
  append(FP, KEY, ARGV[10], CRC)
  redis.call('SET', COUNTER, N)
  reply[1], reply[2] = 'stored', N
end
for _, value in ipairs(found) do reply[#reply + 1] = value end
return reply
"""

# Before the prelude: a mirror further behind than the script should scan is answered
# where the log ends (it catches up by plain reads) before anything else is done.
CHECK_EARLY = """
if N - tonumber(ARGV[13]) > tonumber(ARGV[16]) then return {'behind', N} end
"""

_POPCOUNTS = ", ".join(str(i.bit_count()) for i in range(256))
#: The check script without the prelude (:data:`._lua.CHECK` is both).
CHECK_BODY = _CHECK.replace("POPCOUNTS", _POPCOUNTS)
