export { renderTimeline } from './page';
export { timelineData, type TimelineData } from './data';
