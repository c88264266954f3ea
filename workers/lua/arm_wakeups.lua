#!lua flags=allow-cross-slot-keys
-- arm_wakeup.lua for many queues of one node in one call (docs/reading.md, "On a Redis
-- Cluster"): per queue, the entries already there after the offset it waits for, or,
-- when there are none, its wake flag set. A node's armer sends it for all the queues
-- that wait at once, on the node's own connection.
-- Keys of several slots: the flag above lets a script touch keys of any slots the node
-- serves (Redis 7), but a cluster refuses a call whose declared keys are of several
-- slots, so the key names come as arguments. A key whose slot the node does not serve
-- fails the call (what ran before stays: flags set early only publish once); the armer
-- then arms each queue with arm_wakeup.lua, where its slot is.
-- KEYS: none
-- ARGV[1]: the most entries to return per queue
-- ARGV[2]: how long a flag lives, in milliseconds
-- ARGV[3i], ARGV[3i+1], ARGV[3i+2] for queue i = 1..n: its stream
--          (ls:{topic:queue}:log), its wake flag (ls:{topic:queue}:wake), and the stream
--          ID to read after (the entry before its awaited offset, or 0-0)
-- Returns: per queue, in order, its entries after that ID (at most ARGV[1]) as XRANGE
--          gives them; an empty list when there were none and its flag is set.
local out = {}
for i = 1, (#ARGV - 2) / 3 do
  local stream, flag, after = ARGV[3 * i], ARGV[3 * i + 1], ARGV[3 * i + 2]
  local found = redis.call('XRANGE', stream, '(' .. after, '+', 'COUNT', ARGV[1])
  if #found == 0 then
    redis.call('SET', flag, '1', 'PX', ARGV[2])
  end
  out[i] = found
end
return out
