"""The Lua scripts of :mod:`scrapy_simhash.index.redis` (Redis >= 5; 6.2 has no Functions).

Layout of one namespace, every key starting with its prefix ``P``:

* ``P:t<table>:<bucket hex>``: a string of packed bucket records, one per stored
  fingerprint: 8 bytes big-endian fingerprint, then with a TTL 4 bytes big-endian
  expiry (Unix seconds, Redis clock).
* ``P:k<shard>``: a string of key records: a bucket record, 2 bytes key length, the
  key (UTF-8). The shard is the top ``shard_bits`` of the fingerprint, so a script
  finds the key of any fingerprint it matched.
* ``P:n``: number of stored entries (without TTL); ``P:meta``: the design, fixed
  when the namespace is created, so every worker computes the same bucket keys.

Fingerprints are stored as 8 raw bytes and compared byte by byte (a 256-entry
popcount table), because Lua 5.1 numbers are doubles: 64-bit values would lose
bits, as they would as sorted-set scores. Lua runs ~0.1 us per C call, so the check
script calls as few as it can per record: with k = 3 it lets ``string.find`` pick
the records of a bucket worth reading (see ``leading``), and reads all probed
buckets with one MGET.
"""

from __future__ import annotations

# ARGV[1] record bytes (8, or 12 with expiry); ARGV[2] the 8-byte fingerprint.
# KEYS: the fingerprint's own bucket in each table, then (check script) further
# buckets to probe, then its key shard, the entry counter, the meta hash.
_PRELUDE = """
local band, bxor = bit.band, bit.bxor
local RB = tonumber(ARGV[1])
local FP = ARGV[2]
local NB = #KEYS - 3
local SHARD, COUNTER, META = KEYS[NB + 1], KEYS[NB + 2], KEYS[NB + 3]
if redis.call('EXISTS', META) == 0 then return redis.error_reply('SIMHASH_NOMETA') end
local NOW = 0
if RB == 12 then NOW = tonumber(redis.call('TIME')[1]) end

local byte = string.byte
local POP = {[0] = POPCOUNTS}  -- bits set in each byte value
local function unpack_u32(s, pos)
  local a, b, c, d = byte(s, pos, pos + 3)
  return ((a * 256 + b) * 256 + c) * 256 + d
end

local function live(s, pos)
  if RB == 8 then return true end
  return struct.unpack('>I4', s, pos + 8) > NOW
end

-- every (key record start, key) in a key shard string
local function key_records(s)
  local out, pos = {}, 1
  while s and pos <= #s do
    local klen = struct.unpack('>I2', s, pos + RB)
    out[#out + 1] = {pos, klen}
    pos = pos + RB + 2 + klen
  end
  return out
end

-- bucket records in the same {start, key length} form; -2 makes a record end at pos + RB - 1
local function bucket_records(s)
  local out = {}
  for pos = 1, #s, RB do out[#out + 1] = {pos, -2} end
  return out
end

-- the keys of fp8's records in a key shard: string.find jumps to each occurrence,
-- the walk over record lengths tells a record start from bytes inside a record
local function keys_of(shard, fp8)
  local s, keys = redis.call('GET', shard), {}
  local pos, at = 1, s and string.find(s, fp8, 1, true)
  while at do
    while pos < at do pos = pos + RB + 2 + struct.unpack('>I2', s, pos + RB) end
    if pos == at and live(s, pos) then
      local klen = struct.unpack('>I2', s, pos + RB)
      keys[#keys + 1] = string.sub(s, pos + RB + 2, pos + RB + 1 + klen)
    end
    at = string.find(s, fp8, at + 1, true)
  end
  return keys
end
"""

# ARGV[3] max distance; ARGV[4] mode: 'check' (add_if_new), 'query' or 'add';
# ARGV[5] key; ARGV[6] ttl seconds; ARGV[7] key-shard name prefix; ARGV[8] shard bits;
# ARGV[9] the 8 bytes of NOT wildcard (the bits that count); ARGV[10] one byte per
# bucket key: its table; ARGV[11] the number of tables (the own buckets come first);
# ARGV[12] the prefix bits when table t leads with bytes 2t, 2t + 1 (k = 3, four
# 16-bit blocks: Manku et al.'s B = k + 1), else 0.
# Reply: {1} when stored, else {0, fp8, distance, key, fp8, distance, key, ...}.
_CHECK_AND_ADD = """
local K, MODE, KEY, TTL = tonumber(ARGV[3]), ARGV[4], ARGV[5], tonumber(ARGV[6])
local SHARD_PREFIX, SHARD_DIV = ARGV[7], 2 ^ (32 - tonumber(ARGV[8]))
local MASK, TABLES, NT, PREFIX = ARGV[9], ARGV[10], tonumber(ARGV[11]), tonumber(ARGV[12])
local LOW = 2 ^ (16 - PREFIX)  -- values of the leading block's bits after the bucket key

-- distance outside the wildcard bits of the record at pos, given d for its two
-- bytes at offset first; stops as soon as it exceeds K
local function distance(s, pos, q, m, first, d)
  for step = 2, 6, 2 do
    local i = (first + step) % 8
    local a, b = byte(s, pos + i, pos + i + 1)
    d = d + POP[band(bxor(a, q[i + 1]), m[i + 1])] + POP[band(bxor(b, q[i + 2]), m[i + 2])]
    if d > K then return d end
  end
  return d
end

local function full_distance(s, pos, q)
  local d = 0
  for i = 0, 7 do d = d + POP[bxor(byte(s, pos + i), q[i + 1])] end
  return d
end

-- GET once per call: the buckets scanned by matches() are rewritten by append();
-- the probed buckets come in one MGET (a wildcard probe visits dozens)
local strings = {}
local function get(name)
  if strings[name] == nil then strings[name] = redis.call('GET', name) end
  return strings[name]  -- false when the key does not exist
end

local function prefetch()  -- in slices: unpack() is limited by Lua's C stack
  for first = 1, NB, 1000 do
    local last = math.min(first + 999, NB)
    local got = redis.call('MGET', unpack(KEYS, first, last))
    for n = first, last do strings[KEYS[n]] = got[n - first + 1] end
  end
end

-- bits set in the 16-bit x
local function pop16(x)
  local low = x % 256
  return POP[low] + POP[(x - low) / 256]
end

-- The cost of a check is its inner loops: a few C calls per candidate, ~0.1 us each.
-- Any design: scan every record of bucket s (of table t), rejecting most on the two
-- bytes at first (table t's own bytes are shared with the query when B = k + 1).
local function scan(s, first, q, m, visit)
  local m16 = m[first + 1] * 256 + m[first + 2]
  local q16 = band(q[first + 1] * 256 + q[first + 2], m16)
  for pos = 1 + first, #s, RB do
    local a, b = byte(s, pos, pos + 1)
    local x = bxor(band(a * 256 + b, m16), q16)
    local low = x % 256  -- pop16(x), inline: a Lua call costs as much as the rest
    local d = POP[low] + POP[(x - low) / 256]
    if d <= K then visit(pos - first, first, d) end
  end
end

-- Four 16-bit blocks (PREFIX > 0): a match in table t agrees with the query on every
-- non-wildcard bit of block t (paper, section 3.1), so string.find (C) jumps to the
-- records whose bytes 2t, 2t + 1 spell one of those values; the rest are never read.
-- Returns false, before reading s, when its values outnumber a third of its records
-- (a value, built and searched for, costs about what scanning three records does).
local function leading(s, n, q, m, visit)
  local lead = 2 * byte(TABLES, n)
  local free = (65535 - m[lead + 1] * 256 - m[lead + 2]) % LOW  -- wildcard bits below the key
  if 3 * 2 ^ pop16(free) > #s / RB then return false end
  local own = (q[lead + 1] * 256 + q[lead + 2]) % LOW
  local base = tonumber(string.match(KEYS[n], '%x+$'), 16) * LOW + own - band(own, free)
  local first = (lead + 2) % 8
  local m16 = m[first + 1] * 256 + m[first + 2]
  local q16 = band(q[first + 1] * 256 + q[first + 2], m16)
  local subset = 0
  repeat  -- every value of the free bits: subset enumeration
    local value = base + subset
    local pattern = string.char((value - value % 256) / 256, value % 256)
    local at = string.find(s, pattern, 1, true)
    while at do
      if (at - 1 - lead) % RB == 0 then  -- at a record's block t, not across records
        local a, b = byte(s, at + first - lead, at + first - lead + 1)
        local x = bxor(band(a * 256 + b, m16), q16)
        local low = x % 256  -- pop16(x), inline
        local d = POP[low] + POP[(x - low) / 256]
        if d <= K then visit(at - lead, first, d) end
      end
      at = string.find(s, pattern, at + 1, true)
    end
    subset = band(subset - free, free)
  until subset == 0
  return true
end

local function matches()
  local q, m = {byte(FP, 1, 8)}, {byte(MASK, 1, 8)}
  local seen, found, s = {}, {}, nil
  local function visit(pos, first, d)  -- a candidate at pos whose bytes at first add d
    d = distance(s, pos, q, m, first, d)
    if d <= K and live(s, pos) then
      local f = string.sub(s, pos, pos + 7)
      if not seen[f] then
        seen[f] = true
        found[#found + 1] = {f, full_distance(s, pos, q), unpack_u32(s, pos)}
      end
    end
  end
  prefetch()
  for n = 1, NB do
    s = get(KEYS[n])
    if s and not (PREFIX > 0 and leading(s, n, q, m, visit)) then
      scan(s, (2 * byte(TABLES, n) + 2) % 8, q, m, visit)
    end
  end
  return found
end

local function reply(found)
  local out = {0}
  for _, m in ipairs(found) do
    local shard = SHARD_PREFIX .. math.floor(m[3] / SHARD_DIV)
    for _, key in ipairs(keys_of(shard, m[1])) do
      out[#out + 1] = m[1]; out[#out + 1] = m[2]; out[#out + 1] = key
    end
  end
  return out
end

-- rewrite a bucket or shard with the record appended (SET, not APPEND: an APPENDed
-- string keeps up to twice its size allocated); expired records are dropped on the way
local function append(name, record, records_of)
  local s, kept = get(name), {}
  if s and RB == 8 then kept[1] = s
  elseif s then
    for _, r in ipairs(records_of(s)) do
      if live(s, r[1]) then kept[#kept + 1] = string.sub(s, r[1], r[1] + RB + 1 + r[2]) end
    end
  end
  kept[#kept + 1] = record
  if RB == 8 then redis.call('SET', name, table.concat(kept))
  else redis.call('SET', name, table.concat(kept), 'EX', TTL + 1) end
end

if MODE ~= 'add' then
  -- judged on keys found, not bucket hits: a bucket record whose key record is gone
  -- (a shard key evicted under maxmemory) must not block the page from being stored
  local out = reply(matches())
  if MODE == 'query' or #out > 1 then return out end
end
local record = FP
if RB == 12 then record = FP .. struct.pack('>I4', NOW + TTL) end
for t = 1, NT do append(KEYS[t], record, bucket_records) end
append(SHARD, record .. struct.pack('>I2', #KEY) .. KEY, key_records)
redis.call('INCR', COUNTER)
return {1}
"""

# ARGV[3] '1' to remove the entries whose key is ARGV[4], '0' to remove every entry.
# Reply: how many entries were removed.
_REMOVE = """
local ONE, KEY = ARGV[3] == '1', ARGV[4]
local s = redis.call('GET', SHARD)
local kept, removed = {}, 0
for _, r in ipairs(key_records(s)) do
  local pos, klen = r[1], r[2]
  local mine = string.sub(s, pos, pos + 7) == FP
  local hit = mine and (not ONE or string.sub(s, pos + RB + 2, pos + RB + 1 + klen) == KEY)
  if hit then removed = removed + 1 else kept[#kept + 1] = string.sub(s, pos, pos + RB + 1 + klen) end
end
if removed == 0 then return 0 end

local function rewrite(name, parts)
  local ttl = redis.call('PTTL', name)
  if #parts == 0 then redis.call('DEL', name); return end
  redis.call('SET', name, table.concat(parts))
  if ttl > 0 then redis.call('PEXPIRE', name, ttl) end
end

rewrite(SHARD, kept)
for t = 1, NB do
  local b, parts, left = redis.call('GET', KEYS[t]) or '', {}, removed
  for pos = 1, #b, RB do
    if left > 0 and string.sub(b, pos, pos + 7) == FP then left = left - 1
    else parts[#parts + 1] = string.sub(b, pos, pos + RB - 1) end
  end
  rewrite(KEYS[t], parts)
end
if RB == 8 then redis.call('DECRBY', COUNTER, removed) end
return removed
"""

# KEYS[1] meta; ARGV: field, value, field, value, ... Creates meta unless it exists;
# replies with the meta in force (so every worker adopts the first one's design).
ENSURE_META = """
if redis.call('EXISTS', KEYS[1]) == 0 then redis.call('HSET', KEYS[1], unpack(ARGV)) end
return redis.call('HGETALL', KEYS[1])
"""

_PRELUDE = _PRELUDE.replace("POPCOUNTS", ", ".join(str(i.bit_count()) for i in range(256)))
CHECK_AND_ADD = _PRELUDE + _CHECK_AND_ADD
REMOVE = _PRELUDE + _REMOVE
