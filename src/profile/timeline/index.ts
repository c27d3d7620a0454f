export { renderTimeline } from './page';
export { timelineData, type TimelineData } from './data';
/** The page's one script (inline, constant): a policy may allow it by its hash. */
export { CLIENT_JS as TIMELINE_SCRIPT } from './client';
