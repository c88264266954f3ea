-- Produce prelude: workers/scripts.py puts this in front of every script whose header says
-- "-- Prelude: produce". It is not a script on its own.
-- Defines:
--   append_message(stream, seq, key, body, headers_json, maxlen) -> offset, produced_at_ms
--     appends one message to a queue's stream with the next dense offset: the entry ID is
--     "<offset>-1", so XRANGE can seek by offset directly; maxlen 0 = never trimmed.
local function append_message(stream, seq, key, body, headers_json, maxlen)
  local offset = redis.call('INCR', seq) - 1
  local clock = redis.call('TIME')
  local now_ms = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
  local id = offset .. '-1'
  if tonumber(maxlen) > 0 then
    redis.call('XADD', stream, 'MAXLEN', '~', maxlen, id,
      'k', key, 'b', body, 'h', headers_json, 't', now_ms)
  else
    redis.call('XADD', stream, id, 'k', key, 'b', body, 'h', headers_json, 't', now_ms)
  end
  return offset, now_ms
end
