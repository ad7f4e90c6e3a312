# synthetic experiments: filled by issue 7
