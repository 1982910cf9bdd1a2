"""The Lua scripts of the cluster index (:mod:`.`): each touches the keys of one slot.

Headers (:func:`._layout.pack_header`) are read and written with ``struct``: the state
at byte 1, the stamp (8 bytes) at 2, the put time (4 bytes, the home node's clock) at
10. A record's *lease* runs out ``ARGV`` seconds after it was put, by that clock: a
record not kept by then is dead (its crawler gone), and cannot be kept any more.
"""

from __future__ import annotations

_HEADER = """
local function age(header, now) return now - struct.unpack('>I4', string.sub(header, 10, 13)) end
local function with_state(header, state, stamp8)
  return state .. (stamp8 or string.sub(header, 2, 9)) .. string.sub(header, 10)
end
"""

# Entries of 16 bytes whose last 8 are a record id: drop those of ARGV[1] from KEYS[...]
_DROP_ENTRIES = """
local function drop_entries(name, rid)
  local data = redis.call('GET', name)
  if not data then return end
  local kept, at, from = {}, string.find(data, rid, 1, true), 1
  while at do
    if (at - 1) % 16 == 8 then
      kept[#kept + 1] = string.sub(data, from, at - 9)
      from = at + 8
    end
    at = string.find(data, rid, at + 1, true)
  end
  if from == 1 then return end
  kept[#kept + 1] = string.sub(data, from)
  local rest = table.concat(kept)
  if #rest == 0 then redis.call('DEL', name) else redis.call('SET', name, rest) end
end
"""

#: KEYS: home bucket, headers, keys; ARGV: entry, record id, header, stored key.
PUT = """
local now = tonumber(redis.call('TIME')[1])
local header = string.sub(ARGV[3], 1, 9) .. struct.pack('>I4', now) .. string.sub(ARGV[3], 14)
redis.call('HSET', KEYS[2], ARGV[2], header)
redis.call('HSET', KEYS[3], ARGV[2], ARGV[4])
redis.call('APPEND', KEYS[1], ARGV[1])
return now
"""

#: KEYS: headers; ARGV: record id, new state, 8-byte stamp (empty: keep), lease, states
#: it may be in. Reply: 1, or 0 when the record is gone, dead or in another state.
SET_STATE = _HEADER + """
local header = redis.call('HGET', KEYS[1], ARGV[1])
if not header then return 0 end
local now = tonumber(redis.call('TIME')[1])
if age(header, now) >= tonumber(ARGV[4]) or not string.find(ARGV[5], string.sub(header, 1, 1), 1, true) then
  return 0
end
local stamp8 = nil
if #ARGV[3] == 8 then stamp8 = ARGV[3] end
redis.call('HSET', KEYS[1], ARGV[1], with_state(header, ARGV[2], stamp8))
return 1
"""

#: KEYS: headers, keys; ARGV: record ids. Reply: {now, header or false, key or false, ...}.
RESOLVE = """
local reply = {redis.call('TIME')[1]}
for n = 1, #ARGV do
  reply[#reply + 1] = redis.call('HGET', KEYS[1], ARGV[n])
  reply[#reply + 1] = redis.call('HGET', KEYS[2], ARGV[n])
end
return reply
"""

#: KEYS: home bucket, headers, keys; ARGV: record id. Drops a record from its home.
DROP_HOME = _DROP_ENTRIES + """
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
drop_entries(KEYS[1], ARGV[1])
return 1
"""

#: KEYS: a bucket (or a key's records); ARGV: record id.
DROP = _DROP_ENTRIES + """
drop_entries(KEYS[1], ARGV[1])
return 1
"""

#: KEYS: the stamp clock; ARGV: how many stamps. Reply: the first. Stamps are the clock's
#: node time in microseconds, or one past the last stamp given if that is later: they
#: only grow, even after the node restarts from an older snapshot (its clock went on).
STAMPS = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local first = math.max(now, tonumber(redis.call('GET', KEYS[1]) or '0') + 1)
redis.call('SET', KEYS[1], string.format('%.0f', first + tonumber(ARGV[1]) - 1))
return string.format('%.0f', first)
"""

SCRIPTS = (PUT, SET_STATE, RESOLVE, DROP_HOME, DROP, STAMPS)
