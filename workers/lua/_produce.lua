-- Produce prelude: workers/scripts.py puts this in front of every script whose header says
-- "-- Prelude: produce". It is not a script on its own.
-- Defines:
--   append_message(stream, seq, wake, key, body, headers_json, maxlen) -> offset, produced_at_ms
--     appends one message to a queue's stream with the next dense offset: the entry ID is
--     "<offset>-1", so XRANGE can seek by offset directly; maxlen 0 = never trimmed.
--     When a consumer armed the queue's wake flag `wake` (arm_wakeup.lua: it waits for
--     this queue on a Redis Cluster), the flag is removed and the offset published on the
--     queue's shard channel of that name (docs/reading.md, "On a Redis Cluster").
--     When Redis refuses the XADD (an entry not written by Lockstep sits at or above the
--     new ID), the offset is given back and the script fails with Redis's error: a script's
--     writes before an error are kept, and a taken offset would leave a gap for nothing.
local function append_message(stream, seq, wake, key, body, headers_json, maxlen)
  local offset = redis.call('INCR', seq) - 1
  local clock = redis.call('TIME')
  local now_ms = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
  local id = offset .. '-1'
  local added
  if tonumber(maxlen) > 0 then
    added = redis.pcall('XADD', stream, 'MAXLEN', '~', maxlen, id,
      'k', key, 'b', body, 'h', headers_json, 't', now_ms)
  else
    added = redis.pcall('XADD', stream, id, 'k', key, 'b', body, 'h', headers_json, 't', now_ms)
  end
  if type(added) == 'table' and added.err then
    redis.call('SET', seq, offset)
    return error(added)
  end
  -- pcall: the append is done, and a failed wake-up only delays the consumer (its wait
  -- is bounded); the flag is only ever set on a server that has SPUBLISH (Redis 7).
  if redis.call('DEL', wake) == 1 then
    redis.pcall('SPUBLISH', wake, offset)
  end
  return offset, now_ms
end
