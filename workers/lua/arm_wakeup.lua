-- A consumer waits for a queue's next entry on a Redis Cluster (docs/reading.md, "On a
-- Redis Cluster"): the entries already there after the offset it waits for, or, when
-- there are none, the wake flag set so that the next append publishes on the queue's
-- shard channel. One atomic step: an append either comes before it (and is returned) or
-- after it (and publishes).
-- KEYS[1]: the queue's stream            (ls:{topic:queue}:log)
-- KEYS[2]: the queue's wake flag         (ls:{topic:queue}:wake)
-- ARGV[1]: the stream ID to read after (the entry before the awaited offset, or 0-0)
-- ARGV[2]: the most entries to return
-- ARGV[3]: how long the flag lives, in milliseconds (a consumer that went away leaves
--          none behind for long)
-- Returns: the entries after ARGV[1] (at most ARGV[2]), as XRANGE gives them; an empty
--          list when there were none and the flag is set.
local found = redis.call('XRANGE', KEYS[1], '(' .. ARGV[1], '+', 'COUNT', ARGV[2])
if #found == 0 then
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[3])
end
return found
