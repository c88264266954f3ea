#!lua flags=allow-cross-slot-keys
-- Consumers wait for queues' next entries on a Redis Cluster (docs/reading.md, "On a
-- Redis Cluster"): per queue, the entries already there after the offset it waits for,
-- or, when there are none, its wake flag set so that the next append publishes on the
-- queue's shard channel. Atomic: an append either comes before (and is returned) or
-- after (and publishes).
-- One call arms every queue of one node that waits at once. The flag above lets a script
-- touch keys of any slots its node serves (Redis 7), but a cluster refuses a call whose
-- declared keys are of several slots, so the key names come in ARGV. A key whose slot
-- the node does not serve fails the call (what ran before stays: a flag set early only
-- publishes once); the consumer then arms each of those queues in a call of its own,
-- which declares that queue's keys so that the cluster client sends it where its slot is.
-- KEYS: none, or for a call of one queue its stream and wake flag (routing only: the
--       script reads the names from ARGV)
-- ARGV[1]: the most entries to return per queue
-- ARGV[2]: how long a flag lives, in milliseconds (a consumer that went away leaves none
--          behind for long)
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
