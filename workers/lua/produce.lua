-- Append one message to a queue's stream with the next dense offset.
-- KEYS[1]: the queue's stream            (ls:{topic:queue}:log)
-- KEYS[2]: the queue's offset sequence   (ls:{topic:queue}:seq)
-- ARGV[1]: sharding key
-- ARGV[2]: body (bytes)
-- ARGV[3]: headers as JSON
-- ARGV[4]: approximate max length of the stream (0 = unbounded)
-- Returns: {offset, produced_at_ms}
-- The stream entry ID is "<offset>-1", so XRANGE can seek by offset directly.
local offset = redis.call('INCR', KEYS[2]) - 1
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local id = offset .. '-1'
if tonumber(ARGV[4]) > 0 then
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[4], id,
    'k', ARGV[1], 'b', ARGV[2], 'h', ARGV[3], 't', now_ms)
else
  redis.call('XADD', KEYS[1], id, 'k', ARGV[1], 'b', ARGV[2], 'h', ARGV[3], 't', now_ms)
end
return {offset, now_ms}
